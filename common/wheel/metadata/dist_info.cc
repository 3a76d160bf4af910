#include "common/wheel/metadata/dist_info.h"

#include <strings.h>

#include <cctype>

#include "common/strings.h"

namespace farm::wheel {
namespace {

// A small state machine over RFC 4180. Kept as a class so each step stays short.
class CsvParser {
 public:
  explicit CsvParser(std::string_view text) : text_(text) {}

  Result<std::vector<RecordRow>> Run() {
    while (pos_ < text_.size()) {
      int row_line = line_;
      std::vector<std::string> fields;
      FARM_RETURN_IF_ERROR(ReadRow(&fields));
      if (fields.size() == 1 && fields[0].empty()) continue;  // blank line
      if (fields.size() != 3) {
        return Status::InvalidArgument("RECORD line " + std::to_string(row_line) + " has " +
                                       std::to_string(fields.size()) +
                                       " fields; expected path,hash,size");
      }
      rows_.push_back({fields[0], fields[1], fields[2], row_line});
    }
    return rows_;
  }

 private:
  Status ReadRow(std::vector<std::string>* fields) {
    while (true) {
      std::string field;
      FARM_RETURN_IF_ERROR(ReadField(&field));
      fields->push_back(std::move(field));
      if (pos_ >= text_.size()) return Status::Ok();
      char c = text_[pos_++];
      if (c == ',') continue;
      if (c == '\r' && pos_ < text_.size() && text_[pos_] == '\n') ++pos_;
      ++line_;
      return Status::Ok();
    }
  }

  Status ReadField(std::string* out) {
    if (pos_ < text_.size() && text_[pos_] == '"') return ReadQuoted(out);
    while (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != '\n' &&
           text_[pos_] != '\r') {
      if (text_[pos_] == '"') {
        return Status::InvalidArgument("RECORD line " + std::to_string(line_) +
                                       ": quote inside an unquoted field");
      }
      out->push_back(text_[pos_++]);
    }
    return Status::Ok();
  }

  Status ReadQuoted(std::string* out) {
    int start_line = line_;
    ++pos_;
    while (pos_ < text_.size()) {
      char c = text_[pos_++];
      if (c == '\n') ++line_;
      if (c != '"') {
        out->push_back(c);
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == '"') {
        out->push_back('"');
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != '\n' && text_[pos_] != '\r') {
        return Status::InvalidArgument("RECORD line " + std::to_string(line_) +
                                       ": text after a closing quote");
      }
      return Status::Ok();
    }
    return Status::InvalidArgument("RECORD line " + std::to_string(start_line) +
                                   ": unterminated quoted field");
  }

  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<RecordRow> rows_;
};

}  // namespace

Result<std::vector<RecordRow>> ParseRecord(std::string_view text) { return CsvParser(text).Run(); }

std::vector<HeaderField> ParseHeaders(std::string_view text) {
  std::vector<HeaderField> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    std::string_view line = text.substr(pos, end == text.npos ? text.npos : end - pos);
    pos = end == text.npos ? text.size() : end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;  // the METADATA body starts here
    if ((line[0] == ' ' || line[0] == '\t') && !out.empty()) {
      out.back().value += " " + TrimSpace(line);
      continue;
    }
    size_t colon = line.find(':');
    if (colon == line.npos) continue;
    out.push_back({TrimSpace(line.substr(0, colon)), TrimSpace(line.substr(colon + 1))});
  }
  return out;
}

std::optional<std::string> FindHeader(const std::vector<HeaderField>& fields,
                                      std::string_view name) {
  for (const HeaderField& f : fields) {
    if (f.name.size() == name.size() && strncasecmp(f.name.data(), name.data(), name.size()) == 0) {
      return f.value;
    }
  }
  return std::nullopt;
}

std::vector<std::string> FindHeaders(const std::vector<HeaderField>& fields,
                                     std::string_view name) {
  std::vector<std::string> out;
  for (const HeaderField& f : fields) {
    if (f.name.size() == name.size() && strncasecmp(f.name.data(), name.data(), name.size()) == 0) {
      out.push_back(f.value);
    }
  }
  return out;
}

std::string Base64UrlNoPad(std::string_view bytes) {
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    for (int shift : {18, 12, 6, 0}) out.push_back(kAlphabet[(v >> shift) & 63]);
  }
  size_t rest = bytes.size() - i;
  if (rest == 1) {
    uint32_t v = uint8_t(bytes[i]) << 16;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
  } else if (rest == 2) {
    uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8);
    for (int shift : {18, 12, 6}) out.push_back(kAlphabet[(v >> shift) & 63]);
  }
  return out;
}

}  // namespace farm::wheel
