// Release notes for a GitHub release of built wheels: one Markdown table row per wheel
// and the pip command that installs it. Pure functions; thread-safe.
#ifndef FARM_DAEMON_PUBLISH_RELEASE_NOTES_H_
#define FARM_DAEMON_PUBLISH_RELEASE_NOTES_H_

#include <string>
#include <vector>

namespace farm::publish {

struct WheelNotesRow {
  std::string wheel;                        // file name
  std::string python;                       // "3.12"
  std::string torch;                        // "2.8"; "" when the package needs none
  std::string cuda;                         // "12.8"
  std::vector<std::string> sass_archs;      // from the fatbinary manifest: "sm_90a", "sm_120a"
  std::vector<std::string> gpus_validated;  // "H100 80GB HBM3"; empty: not validated
  std::string accuracy;                     // "cos 0.9998, rel-L1 0.012"
  std::string tops;                         // "612"
  std::string sha256;                       // hex
  // Wheels of other recipes it was built and/or validated against (recipe `requires:`):
  // "triton-3.6.0-...whl sha256 <hex> (build and validation)".
  std::vector<std::string> consumed;
};

struct ReleaseNotesInput {
  std::string package;  // distribution name, "sageattention"
  std::string version;  // "2.2.0+cu128torch2.8"
  std::string summary;  // optional paragraph above the table
  // Base URL the wheels download from (".../releases/download/<tag>"); when set the
  // wheel names link there and the pip line installs the first wheel by URL.
  std::string download_base_url;
  // A PEP 503 index or find-links page; when set the pip line uses it instead.
  std::string find_links_url;
  std::vector<WheelNotesRow> wheels;
};

// Returns Markdown: a "## <package> <version>" heading, the summary, a table with
// columns Wheel | Python | torch | CUDA | SASS archs | GPUs validated on | Accuracy |
// TOPS | sha256, a "Built and validated against" list for wheels that consumed other
// wheels, and a fenced pip install command. Cell text is escaped so "|" and
// newlines cannot break the table; empty cells render as "—".
std::string RenderReleaseNotes(const ReleaseNotesInput& input);

}  // namespace farm::publish

#endif  // FARM_DAEMON_PUBLISH_RELEASE_NOTES_H_
