#include "daemon/sched/placement.h"

#include <sstream>

namespace farm::sched {
namespace {

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out.empty() ? "none" : out;
}

bool HasPython(const farm::v1::MatrixCell& cell, const farm::v1::Capabilities& caps,
               std::string* have) {
  std::vector<std::string> seen;
  for (const auto& py : caps.pythons()) {
    seen.push_back(py.version() + (py.torch_version().empty() ? "" : "+torch" + py.torch_version()));
    if (!cell.python().empty() && py.version() != cell.python()) continue;
    if (cell.torch().empty() || py.torch_version().rfind(cell.torch(), 0) == 0) return true;
  }
  *have = Join(seen);
  return false;
}

// The toolkit version must match the cell's CUDA (major.minor) when the cell names one.
bool HasToolkit(const farm::v1::MatrixCell& cell, const farm::v1::Capabilities& caps,
                std::string* have) {
  if (cell.cuda().empty()) return true;
  std::vector<std::string> seen;
  for (const auto& tk : caps.toolkits()) {
    seen.push_back(tk.version());
    if (tk.version() == cell.cuda() || tk.version().rfind(cell.cuda() + ".", 0) == 0) return true;
  }
  *have = Join(seen);
  return false;
}

}  // namespace

std::string MissingRequirement(const farm::v1::MatrixCell& cell,
                               const farm::v1::Capabilities& caps) {
  if (!caps.probe_error().empty()) return "quarantined: " + caps.probe_error();
  if (!cell.platform().empty() && cell.platform() != caps.platform()) {
    return "platform " + cell.platform() + " needed (has " + caps.platform() + ")";
  }
  std::string have;
  if (!HasPython(cell, caps, &have)) {
    std::string want = "Python " + (cell.python().empty() ? "any" : cell.python());
    if (!cell.torch().empty()) want += " with torch " + cell.torch();
    return "no " + want + " (has " + have + ")";
  }
  if (!HasToolkit(cell, caps, &have)) {
    return "no CUDA toolkit " + cell.cuda() + " (has " + have + ")";
  }
  return "";
}

}  // namespace farm::sched
