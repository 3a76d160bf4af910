#include "common/wheel/metadata/requires_dist.h"

#include <strings.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

#include "common/strings.h"
#include "common/utf8.h"
#include "common/wheel/metadata/dependency.h"
#include "common/wheel/wheel_name.h"
#include "common/wheel/wheel_rewrite.h"

namespace farm::wheel {
namespace {

bool IsVersionChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '*' || c == '+' ||
         c == '!' || c == '_' || c == '-';
}

bool HeaderIs(std::string_view name, std::string_view want) {
  return name.size() == want.size() && strncasecmp(name.data(), want.data(), want.size()) == 0;
}

// One clause "OP VERSION" of a specifier; returns the characters it took, 0 when malformed.
size_t ClauseLength(std::string_view s) {
  static const char* kOps[] = {"===", "==", "!=", ">=", "<=", "~=", ">", "<"};
  for (const char* op : kOps) {
    std::string_view o(op);
    if (!s.starts_with(o)) continue;
    size_t n = o.size();
    size_t v = n;
    while (v < s.size() && IsVersionChar(s[v])) ++v;
    return v > n && std::isalnum(static_cast<unsigned char>(s[n])) ? v : 0;
  }
  return 0;
}

// The parts of an existing Requires-Dist value the edit needs: its name ("" when it does
// not start with one: such a row is not the project's and is kept), its extras, and
// whether it applies only with an extra. Its version part may hold anything.
struct ExistingRow {
  std::string name;
  std::vector<std::string> extras;
  bool extra_marker = false;
};

Result<ExistingRow> ReadRow(std::string_view value) {
  Result<DependencySpec> head = ParseDependencyHead(value);
  if (!head.ok()) return head.status().WithContext("Requires-Dist");
  return ExistingRow{std::move(head->name), std::move(head->extras),
                     MarkerNamesExtra(head->marker)};
}

// One logical header (a "Name: value" line and its continuation lines) or other line of
// the header block, as a byte range of the METADATA text.
struct Entry {
  size_t begin = 0;
  size_t end = 0;    // after its line terminator
  std::string name;  // empty for a line without ':'
  std::string value;
};

struct HeaderBlock {
  std::vector<Entry> entries;
  size_t end = 0;  // where the blank line (or the text) ends the block
  std::string eol = "\n";
};

HeaderBlock SplitHeaders(std::string_view text) {
  HeaderBlock block;
  size_t first_nl = text.find('\n');
  if (first_nl != std::string_view::npos && first_nl > 0 && text[first_nl - 1] == '\r') {
    block.eol = "\r\n";
  }
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
    std::string_view line = text.substr(pos, end - pos);
    std::string_view bare = line;
    while (!bare.empty() && (bare.back() == '\n' || bare.back() == '\r')) bare.remove_suffix(1);
    if (bare.empty()) break;  // the description body follows
    bool continuation = (bare[0] == ' ' || bare[0] == '\t') && !block.entries.empty();
    if (continuation) {
      block.entries.back().end = end;
      if (!block.entries.back().name.empty()) {
        block.entries.back().value += " " + TrimSpace(bare);
      }
    } else {
      Entry e{pos, end, "", ""};
      size_t colon = bare.find(':');
      if (colon != std::string_view::npos) {
        e.name = TrimSpace(bare.substr(0, colon));
        e.value = TrimSpace(bare.substr(colon + 1));
      }
      block.entries.push_back(std::move(e));
    }
    pos = end;
  }
  block.end = pos;
  return block;
}

Status CheckMetadata(std::string_view metadata, const HeaderBlock& block) {
  if (static_cast<int64_t>(metadata.size()) > kMaxDistInfoBytes) {
    return Status::InvalidArgument("METADATA is larger than " + std::to_string(kMaxDistInfoBytes) +
                                   " bytes");
  }
  if (!IsValidUtf8(metadata)) return Status::InvalidArgument("METADATA is not UTF-8");
  for (std::string_view unique : {"Metadata-Version", "Name", "Version"}) {
    int count = 0;
    for (const Entry& e : block.entries) count += HeaderIs(e.name, unique) ? 1 : 0;
    if (count > 1) {
      return Status::InvalidArgument("METADATA has " + std::to_string(count) + " " +
                                     std::string(unique) + " headers; expected one");
    }
  }
  for (const Entry& e : block.entries) {
    if (!HeaderIs(e.name, "Metadata-Version")) continue;
    if (e.value == "1.0" || e.value == "1.1") {
      return Status::InvalidArgument("METADATA is Metadata-Version " + e.value +
                                     ", which has no Requires-Dist (1.2 or later needed)");
    }
  }
  return Status::Ok();
}

std::string JoinExtras(const std::set<std::string>& extras) {
  if (extras.empty()) return "";
  std::string out = "[";
  for (const std::string& e : extras) out += (out.size() > 1 ? "," : "") + e;
  return out + "]";
}

}  // namespace

Result<PinSpec> ParsePinSpec(std::string_view text) {
  const std::string t = TrimSpace(text);
  FARM_ASSIGN_OR_RETURN(DependencySpec dep, ParseDependency(t));
  // What the farm writes is the name directly followed by its clauses, nothing else.
  const std::string quoted = "\"" + std::string(text.substr(0, 200)) + "\"";
  if (!dep.extras.empty() || !dep.marker.empty() || t != dep.name + dep.specifier) {
    return Status::InvalidArgument("requirement " + quoted +
                                   ": extras, markers, parentheses and spaces are not accepted");
  }
  std::string_view rest = dep.specifier;
  while (true) {
    size_t len = ClauseLength(rest);
    if (len == 0 || (len < rest.size() && rest[len] != ',')) {
      return Status::InvalidArgument("requirement " + quoted +
                                     " must be NAME followed by OP VERSION clauses "
                                     "(==, !=, >=, <=, ~=, >, <, ===) separated by commas");
    }
    if (len == rest.size()) return PinSpec{dep.name, dep.specifier};
    rest.remove_prefix(len + 1);
  }
}

Result<std::string> TorchRequirementFor(std::string_view torch_version, bool exact) {
  const std::string v = TrimSpace(torch_version);
  std::string_view public_version = std::string_view(v).substr(0, v.find('+'));
  size_t major_end = 0;
  while (major_end < public_version.size() &&
         std::isdigit(static_cast<unsigned char>(public_version[major_end]))) {
    ++major_end;
  }
  size_t minor_end = major_end + 1;
  while (minor_end < public_version.size() &&
         std::isdigit(static_cast<unsigned char>(public_version[minor_end]))) {
    ++minor_end;
  }
  if (major_end == 0 || major_end >= public_version.size() || public_version[major_end] != '.' ||
      minor_end == major_end + 1 ||
      !std::all_of(public_version.begin(), public_version.end(), IsVersionChar) ||
      public_version.find('*') != std::string_view::npos) {
    return Status::InvalidArgument("torch version \"" + std::string(torch_version.substr(0, 64)) +
                                   "\" does not start with MAJOR.MINOR");
  }
  // Only digits and dots: a final release, pinned by its minor unless asked for more.
  bool release = std::all_of(public_version.begin(), public_version.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
  });
  if (exact || !release) return "torch==" + std::string(public_version);
  return "torch==" + std::string(public_version.substr(0, minor_end)) + ".*";
}

Result<std::string> TorchFloorRequirement(std::string_view floor) {
  size_t dot = floor.find('.');
  auto digits = [](std::string_view s) {
    return !s.empty() && s.size() <= 4 && std::all_of(s.begin(), s.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c));
    });
  };
  if (dot == std::string_view::npos || !digits(floor.substr(0, dot)) ||
      !digits(floor.substr(dot + 1))) {
    return Status::InvalidArgument("torch floor \"" + std::string(floor.substr(0, 64)) +
                                   "\" must be MAJOR.MINOR such as \"2.9\"");
  }
  return "torch>=" + std::string(floor);
}

std::vector<std::string> RequiresDistFor(const std::vector<std::string>& requires_dist,
                                         std::string_view project) {
  std::vector<std::string> out;
  const std::string want = NormalizeProjectName(project);
  for (const std::string& value : requires_dist) {
    std::string_view name = DependencyName(value);
    if (!name.empty() && NormalizeProjectName(name) == want) out.push_back(value);
  }
  return out;
}

Result<std::string> SetRequiresDist(std::string_view metadata, const PinSpec& pin) {
  HeaderBlock block = SplitHeaders(metadata);
  FARM_RETURN_IF_ERROR(CheckMetadata(metadata, block));
  const std::string project = NormalizeProjectName(pin.name);
  std::set<std::string> extras;
  std::vector<const Entry*> replaced;
  const Entry* last_requires = nullptr;
  for (const Entry& e : block.entries) {
    if (!HeaderIs(e.name, "Requires-Dist")) continue;
    last_requires = &e;
    FARM_ASSIGN_OR_RETURN(ExistingRow row, ReadRow(e.value));
    if (row.name.empty() || NormalizeProjectName(row.name) != project || row.extra_marker) continue;
    extras.insert(row.extras.begin(), row.extras.end());
    replaced.push_back(&e);
  }
  const std::string line =
      "Requires-Dist: " + pin.name + JoinExtras(extras) + pin.specifier + block.eol;
  std::string out;
  out.reserve(metadata.size() + line.size());
  size_t insert_at = !replaced.empty() ? replaced.front()->begin
                     : last_requires   ? last_requires->end
                                       : block.end;
  size_t pos = 0;
  auto copy_to = [&](size_t end) {
    if (end > pos) out.append(metadata.substr(pos, end - pos));
    pos = std::max(pos, end);
  };
  for (const Entry* e : replaced) {
    copy_to(e->begin);
    if (e->begin == insert_at) out += line;
    pos = e->end;
  }
  if (replaced.empty()) {
    copy_to(insert_at);
    // A header block that ends the file without a line terminator gets one first.
    if (insert_at > 0 && metadata[insert_at - 1] != '\n') out += block.eol;
    out += line;
  }
  copy_to(metadata.size());
  return out;
}

Result<PinResult> PinRequirement(const std::string& in_path, const std::string& requirement,
                                 const std::string& out_dir) {
  FARM_ASSIGN_OR_RETURN(PinSpec pin, ParsePinSpec(requirement));
  FARM_RETURN_IF_ERROR(ParseWheelFilename(in_path).status());
  FARM_ASSIGN_OR_RETURN(DistInfoText info, ReadDistInfoText(in_path));
  FARM_ASSIGN_OR_RETURN(std::string metadata, SetRequiresDist(info.metadata, pin));
  const std::string filename = std::filesystem::path(in_path).filename().string();
  PinResult result{in_path, filename, pin.ToString(), false};
  if (metadata == info.metadata) return result;
  DistInfoRenamer same{info.stem, info.stem};
  FARM_ASSIGN_OR_RETURN(std::string record, RewriteRecord(info.record, same, metadata));
  result.path = out_dir + "/" + filename;
  result.rewritten = true;
  FARM_RETURN_IF_ERROR(WriteRewrittenWheel(in_path, result.path, same, metadata, record));
  return result;
}

}  // namespace farm::wheel
