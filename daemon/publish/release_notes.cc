#include "daemon/publish/release_notes.h"

namespace farm::publish {
namespace {

// Markdown table cells cannot hold raw pipes or newlines.
std::string Cell(const std::string& text) {
  if (text.empty()) return "—";
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string Join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : sep) + item;
  return out;
}

std::string WheelCell(const ReleaseNotesInput& input, const WheelNotesRow& row) {
  if (input.download_base_url.empty()) return "`" + Cell(row.wheel) + "`";
  return "[`" + Cell(row.wheel) + "`](" + input.download_base_url + "/" + row.wheel + ")";
}

std::string PipLine(const ReleaseNotesInput& input) {
  if (!input.find_links_url.empty()) {
    return "pip install \"" + input.package + "==" + input.version + "\" --find-links " +
           input.find_links_url;
  }
  if (!input.download_base_url.empty() && !input.wheels.empty()) {
    return "pip install " + input.download_base_url + "/" + input.wheels.front().wheel;
  }
  return "pip install \"" + input.package + "==" + input.version + "\"";
}

}  // namespace

std::string RenderReleaseNotes(const ReleaseNotesInput& input) {
  std::string md = "## " + input.package + " " + input.version + "\n\n";
  if (!input.summary.empty()) md += input.summary + "\n\n";
  md +=
      "| Wheel | Python | torch | CUDA | SASS archs | GPUs validated on | Accuracy | TOPS "
      "| sha256 |\n";
  md += "|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& row : input.wheels) {
    md += "| " + WheelCell(input, row) + " | " + Cell(row.python) + " | " + Cell(row.torch) +
          " | " + Cell(row.cuda) + " | " + Cell(Join(row.sass_archs, ", ")) + " | " +
          Cell(row.gpus_validated.empty() ? "not validated" : Join(row.gpus_validated, ", ")) +
          " | " + Cell(row.accuracy) + " | " + Cell(row.tops) + " | " +
          (row.sha256.empty() ? "—" : "`" + Cell(row.sha256) + "`") + " |\n";
  }
  std::string consumed;
  for (const auto& row : input.wheels) {
    for (const auto& c : row.consumed) consumed += "- " + Cell(row.wheel) + ": " + Cell(c) + "\n";
  }
  if (!consumed.empty()) {
    md +=
        "\nBuilt and validated against (wheels the farm installed with --no-index):\n\n" + consumed;
  }
  md += "\nInstall";
  if (input.find_links_url.empty() && input.wheels.size() > 1) {
    md += " (pick the wheel that matches your Python, torch and CUDA from the table)";
  }
  md += ":\n\n```bash\n" + PipLine(input) + "\n```\n";
  return md;
}

}  // namespace farm::publish
