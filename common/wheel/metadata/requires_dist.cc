#include "common/wheel/metadata/requires_dist.h"

#include <strings.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

#include "common/utf8.h"
#include "common/wheel/wheel_name.h"
#include "common/wheel/wheel_rewrite.h"

namespace farm::wheel {
namespace {

bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
}

bool IsVersionChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '*' || c == '+' ||
         c == '!' || c == '_' || c == '-';
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
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

// The parts of an existing Requires-Dist value the edit needs.
struct ExistingRow {
  std::string name;
  std::vector<std::string> extras;
  bool extra_marker = false;  // the marker mentions `extra`
};

// True when the marker (the text after ';') names the `extra` variable outside quotes.
bool MarkerNamesExtra(std::string_view marker) {
  char quote = 0;
  for (size_t i = 0; i < marker.size(); ++i) {
    char c = marker[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
      continue;
    }
    if (!std::isalpha(static_cast<unsigned char>(c)) && c != '_') continue;
    size_t j = i;
    while (j < marker.size() &&
           (std::isalnum(static_cast<unsigned char>(marker[j])) || marker[j] == '_')) {
      ++j;
    }
    if (marker.substr(i, j - i) == "extra") return true;
    i = j - 1;
  }
  return false;
}

// Reads the name, extras and marker kind of a Requires-Dist value; the name is empty when
// the value does not start with one (such a row is not the project's and is kept).
Result<ExistingRow> ReadRow(std::string_view value) {
  ExistingRow row;
  value = Trim(value);
  size_t n = 0;
  while (n < value.size() && IsNameChar(value[n])) ++n;
  row.name = std::string(value.substr(0, n));
  size_t semi = value.find(';');
  if (semi != std::string_view::npos) row.extra_marker = MarkerNamesExtra(value.substr(semi + 1));
  std::string_view rest = Trim(value.substr(n));
  if (!rest.starts_with('[')) return row;
  size_t close = rest.find(']');
  if (close == std::string_view::npos || (semi != std::string_view::npos && close > semi)) {
    return Status::InvalidArgument("Requires-Dist \"" + std::string(value.substr(0, 200)) +
                                   "\" has an unterminated extras list");
  }
  std::string_view list = rest.substr(1, close - 1);
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view extra = Trim(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    if (extra.empty() || !std::all_of(extra.begin(), extra.end(), IsNameChar)) {
      return Status::InvalidArgument("Requires-Dist \"" + std::string(value.substr(0, 200)) +
                                     "\" has a malformed extra \"" +
                                     std::string(extra.substr(0, 64)) + "\"");
    }
    row.extras.push_back(NormalizeProjectName(extra));
  }
  return row;
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
        block.entries.back().value += " " + std::string(Trim(bare));
      }
    } else {
      Entry e{pos, end, "", ""};
      size_t colon = bare.find(':');
      if (colon != std::string_view::npos) {
        e.name = std::string(Trim(bare.substr(0, colon)));
        e.value = std::string(Trim(bare.substr(colon + 1)));
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
  std::string_view t = Trim(text);
  size_t n = 0;
  while (n < t.size() && IsNameChar(t[n])) ++n;
  const std::string quoted = "\"" + std::string(text.substr(0, 200)) + "\"";
  if (n == 0 || !std::isalnum(static_cast<unsigned char>(t[0]))) {
    return Status::InvalidArgument("requirement " + quoted + " does not start with a project name");
  }
  PinSpec pin{std::string(t.substr(0, n)), ""};
  std::string_view rest = t.substr(n);
  while (true) {
    size_t len = ClauseLength(rest);
    if (len == 0) {
      return Status::InvalidArgument("requirement " + quoted +
                                     " must be NAME followed by OP VERSION clauses "
                                     "(==, !=, >=, <=, ~=, >, <, ===) separated by commas");
    }
    pin.specifier += std::string(rest.substr(0, len));
    rest = rest.substr(len);
    if (rest.empty()) return pin;
    if (rest[0] != ',') {
      return Status::InvalidArgument("requirement " + quoted + " has \"" +
                                     std::string(rest.substr(0, 32)) +
                                     "\" after a clause; extras, markers and URLs are not "
                                     "accepted");
    }
    pin.specifier += ',';
    rest = rest.substr(1);
  }
}

Result<std::string> TorchRequirementFor(std::string_view torch_version, bool exact) {
  std::string_view v = Trim(torch_version);
  std::string_view public_version = v.substr(0, v.find('+'));
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
    std::string_view v = Trim(value);
    size_t n = 0;
    while (n < v.size() && IsNameChar(v[n])) ++n;
    if (n > 0 && NormalizeProjectName(v.substr(0, n)) == want) out.push_back(value);
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
