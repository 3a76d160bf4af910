// farmctl coverage: every cell (package x version x torch x CUDA x Python x arch list x
// platform) the farm knows, with its state (docs/coverage.md), as a table or JSON.
#include "cli/commands.h"
#include "cli/format.h"
#include "common/flags.h"

namespace farm::cli {
namespace {

std::string OrDash(const std::string& s) { return s.empty() ? "-" : s; }

std::string DecidedBy(const farm::v1::CoverageCell& c) {
  if (c.job_id() > 0) return "job " + std::to_string(c.job_id());
  return c.build_id() > 0 ? "matrix of build " + std::to_string(c.build_id()) : "-";
}

}  // namespace

Status CoverageCommand(const CommandEnv& env, const Flags& flags) {
  farm::v1::GetCoverageRequest req;
  req.set_package(flags.Get("package"));
  req.set_torch(flags.Get("torch"));
  req.set_cuda(flags.Get("cuda"));
  req.set_python(flags.Get("python"));
  req.set_arch(flags.Get("arch"));
  req.set_state(flags.Get("state"));
  farm::v1::Coverage resp;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::GetCoverage, req, &resp));
  if (env.json) {
    *env.out << ToJson(resp) << "\n";
    return Status::Ok();
  }
  if (resp.cells().empty()) {
    *env.out << "no cells (from the newest " << resp.builds_read() << " builds)\n";
    return Status::Ok();
  }
  std::vector<std::vector<std::string>> rows = {{"PACKAGE", "VERSION", "TORCH", "CUDA", "PYTHON",
                                                 "ARCH LIST", "PLATFORM", "STATE", "DECIDED BY",
                                                 "WHEEL"}};
  for (const auto& c : resp.cells()) {
    // A release candidate's torch says so ("2.12 rc"): a final release's build replaces it.
    std::string torch = OrDash(c.torch()) + (c.release_candidate() ? " rc" : "");
    rows.push_back({c.package(), OrDash(c.version()), torch, OrDash(c.cuda()), OrDash(c.python()),
                    OrDash(c.arch_list()), OrDash(c.platform()), c.state_words(), DecidedBy(c),
                    OrDash(c.wheel())});
  }
  *env.out << AlignColumns(rows);
  for (const auto& c : resp.cells()) {
    if (c.state() != "failed" || c.cause().empty()) continue;
    std::string cause = c.cause().substr(0, c.cause().find('\n'));
    *env.out << "job " << c.job_id() << " (" << c.package() << "): " << cause << "\n";
  }
  return Status::Ok();
}

}  // namespace farm::cli
