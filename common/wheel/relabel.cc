#include "common/wheel/relabel.h"

#include <strings.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "common/sha256.h"
#include "common/strings.h"
#include "common/wheel/metadata/dist_info.h"
#include "common/wheel/wheel_name.h"
#include "common/wheel/wheel_rewrite.h"

namespace farm::wheel {
namespace {

// Replaces the value of the first "Version:" header; the body after the blank line and
// every other byte stay as they are.
Result<std::string> SetMetadataVersion(const std::string& metadata, const std::string& version) {
  size_t pos = 0;
  while (pos < metadata.size()) {
    size_t eol = metadata.find('\n', pos);
    size_t end = eol == std::string::npos ? metadata.size() : eol;
    std::string_view line(metadata.data() + pos, end - pos);
    if (line.empty() || line == "\r") break;  // end of the header block
    if (line.size() >= 8 && strncasecmp(line.data(), "Version:", 8) == 0) {
      size_t value_end = line.ends_with('\r') ? end - 1 : end;
      return metadata.substr(0, pos) + "Version: " + version + metadata.substr(value_end);
    }
    pos = end + 1;
  }
  return Status::InvalidArgument("METADATA has no Version header");
}

}  // namespace

bool IsValidLocalLabel(const std::string& label) {
  if (label.empty() || label.front() == '.' || label.back() == '.') return false;
  char prev = 0;
  for (char c : label) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.';
    if (!ok || (c == '.' && prev == '.')) return false;
    prev = c;
  }
  return true;
}

std::map<std::string, std::string> CellLabelVars(const std::string& python,
                                                 const std::string& torch, const std::string& cuda,
                                                 const std::string& platform) {
  return {{"python", python},
          {"python_nodot", NoDot(python)},
          {"torch", torch},
          {"torch_nodot", NoDot(torch)},
          {"cuda", cuda},
          {"cuda_nodot", NoDot(cuda)},
          {"cuda_major", cuda.substr(0, cuda.find('.'))},
          {"platform", platform}};
}

Result<std::string> RenderLocalLabel(const std::string& label_template,
                                     const std::map<std::string, std::string>& vars) {
  std::string out;
  for (size_t i = 0; i < label_template.size(); ++i) {
    if (label_template[i] != '{') {
      out += label_template[i];
      continue;
    }
    size_t close = label_template.find('}', i);
    if (close == std::string::npos) {
      return Status::InvalidArgument("local version template \"" + label_template +
                                     "\": unterminated '{'");
    }
    std::string key = label_template.substr(i + 1, close - i - 1);
    auto it = vars.find(key);
    if (it == vars.end()) {
      return Status::InvalidArgument("local version template \"" + label_template +
                                     "\": unknown placeholder {" + key + "}");
    }
    out += it->second;
    i = close;
  }
  for (char& c : out) c = (c == '-' || c == '_') ? '.' : c;
  out = AsciiLower(out);
  if (!out.empty() && !IsValidLocalLabel(out)) {
    return Status::InvalidArgument("local version template \"" + label_template + "\" gives \"" +
                                   out + "\", which is not a PEP 440 local label");
  }
  return out;
}

std::string WithLocalLabel(const std::string& version, const std::string& label) {
  std::string public_version = version.substr(0, version.find('+'));
  return label.empty() ? public_version : public_version + "+" + label;
}

Result<RelabelResult> RelabelWheel(const std::string& in_path, const std::string& label,
                                   const std::string& out_dir) {
  if (!label.empty() && !IsValidLocalLabel(label)) {
    return Status::InvalidArgument("\"" + label + "\" is not a PEP 440 local label");
  }
  FARM_ASSIGN_OR_RETURN(WheelFilename fn, ParseWheelFilename(in_path));
  FARM_ASSIGN_OR_RETURN(DistInfoText info, ReadDistInfoText(in_path));
  auto version = FindHeader(ParseHeaders(info.metadata), "Version");
  if (!version) return Status::InvalidArgument(in_path + ": METADATA has no Version");
  const std::string new_version = WithLocalLabel(*version, label);
  RelabelResult result{in_path, std::filesystem::path(in_path).filename().string(), new_version,
                       false};
  if (NormalizeVersion(new_version) == NormalizeVersion(*version) &&
      NormalizeVersion(new_version) == NormalizeVersion(fn.version)) {
    return result;
  }
  const std::string dist = info.stem.substr(0, info.stem.find('-'));
  DistInfoRenamer rename{info.stem, dist + "-" + new_version};
  FARM_ASSIGN_OR_RETURN(std::string metadata, SetMetadataVersion(info.metadata, new_version));
  FARM_ASSIGN_OR_RETURN(std::string record, RewriteRecord(info.record, rename, metadata));
  result.filename = fn.name + "-" + new_version + (fn.build_tag.empty() ? "" : "-" + fn.build_tag) +
                    "-" + fn.python_tag + "-" + fn.abi_tag + "-" + fn.platform_tag + ".whl";
  result.path = out_dir + "/" + result.filename;
  result.rewritten = true;
  FARM_RETURN_IF_ERROR(WriteRewrittenWheel(in_path, result.path, rename, metadata, record));
  return result;
}

bool IsVariantLabel(std::string_view label) {
  return !label.empty() && label.size() <= 16 &&
         std::all_of(label.begin(), label.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '_' || c == '.';
         });
}

Result<RelabelResult> MakeVariantWheel(const std::string& in_path, const std::string& label,
                                       const std::string& variant_json,
                                       const std::string& out_dir) {
  if (!IsVariantLabel(label)) {
    return Status::InvalidArgument("\"" + label + "\" is not a PEP 825 variant label");
  }
  FARM_ASSIGN_OR_RETURN(WheelFilename fn, ParseWheelFilename(in_path));
  FARM_ASSIGN_OR_RETURN(DistInfoText info, ReadDistInfoText(in_path));
  auto version = FindHeader(ParseHeaders(info.metadata), "Version");
  if (!version) return Status::InvalidArgument(in_path + ": METADATA has no Version");
  const std::string public_version = WithLocalLabel(*version, "");
  const std::string dist = info.stem.substr(0, info.stem.find('-'));
  DistInfoRenamer rename{info.stem, dist + "-" + public_version};
  FARM_ASSIGN_OR_RETURN(std::string metadata, SetMetadataVersion(info.metadata, public_version));
  FARM_ASSIGN_OR_RETURN(std::string record, RewriteRecord(info.record, rename, metadata));
  const std::string json_path = rename.new_stem + ".dist-info/variant.json";
  // RECORD's own row stays last, the new file's row goes just before it.
  const std::string record_row = rename.new_stem + ".dist-info/RECORD,";
  size_t at = record.find(record_row);
  if (at == std::string::npos || (at > 0 && record[at - 1] != '\n')) at = record.size();
  Sha256 hasher;
  hasher.Update(variant_json);
  record.insert(at, json_path + ",sha256=" + Base64UrlNoPad(hasher.Digest()) + "," +
                        std::to_string(variant_json.size()) + "\n");
  RelabelResult result;
  result.version = public_version;
  result.filename = fn.name + "-" + public_version +
                    (fn.build_tag.empty() ? "" : "-" + fn.build_tag) + "-" + fn.python_tag + "-" +
                    fn.abi_tag + "-" + fn.platform_tag + "-" + label + ".whl";
  result.path = out_dir + "/" + result.filename;
  result.rewritten = true;
  FARM_RETURN_IF_ERROR(WriteRewrittenWheel(in_path, result.path, rename, metadata, record,
                                           {{json_path, variant_json}}));
  return result;
}

std::string NoDot(std::string_view version) {
  std::string out;
  for (char c : version) {
    if (c != '.') out += c;
  }
  return out;
}

}  // namespace farm::wheel
