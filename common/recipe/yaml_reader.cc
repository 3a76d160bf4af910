#include "common/recipe/yaml_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace farm::recipe {
namespace {

constexpr size_t kMaxQuoted = 40;

std::string JoinNames(const std::vector<std::string_view>& names) {
  std::string out;
  for (std::string_view n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

// Shortest text that reads back as `v` ("0.99", "4", "1e+06").
std::string FormatNumber(double v) {
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, res.ptr);
}

Status TypeError(const ErrorSink& sink, const Field& f, std::string_view expected) {
  return sink.At(f.value_pos(), "\"" + f.name + "\" must be " + std::string(expected) + ", got " +
                                    Describe(f.value));
}

}  // namespace

namespace {

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    out.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

// The 0-based column of the last '[' or '{' of `line` that the line does not close (quoted
// text and comments left out); npos when every one is closed.
size_t UnclosedOpener(std::string_view line) {
  std::vector<size_t> open;
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#' && (i == 0 || line[i - 1] == ' ')) {
      break;
    } else if (c == '[' || c == '{') {
      open.push_back(i);
    } else if ((c == ']' || c == '}') && !open.empty()) {
      open.pop_back();
    }
  }
  return open.empty() ? std::string_view::npos : open.back();
}

}  // namespace

SyntaxError ExplainSyntaxError(std::string_view yaml, const YAML::Mark& mark,
                               const std::string& what) {
  std::vector<std::string_view> lines = Lines(yaml);
  const int last = mark.line < 0 ? static_cast<int>(lines.size()) - 1
                                 : std::min<int>(mark.line, static_cast<int>(lines.size()) - 1);
  for (int i = 0; i <= last; ++i) {
    std::string_view l = lines[static_cast<size_t>(i)];
    size_t first = l.find_first_not_of(' ');
    // A tab after some spaces may be a block scalar's content: blamed only near the error.
    if (first != std::string_view::npos && l[first] == '\t' && (first == 0 || i >= last - 1)) {
      return {{i + 1, static_cast<int>(first) + 1},
              "a tab indents this line: YAML indents with spaces only (yaml-cpp: " + what + ")"};
    }
  }
  bool flow = what.find("end of sequence flow") != std::string::npos ||
              what.find("end of map flow") != std::string::npos;
  for (int i = last; flow && i >= 0 && i >= last - 50; --i) {
    size_t col = UnclosedOpener(lines[static_cast<size_t>(i)]);
    if (col == std::string_view::npos) continue;
    bool list = lines[static_cast<size_t>(i)][col] == '[';
    return {{i + 1, static_cast<int>(col) + 1},
            std::string("this '") + (list ? "[" : "{") + "' opens a " + (list ? "list" : "map") +
                " that is never closed: a '" + (list ? "]" : "}") + "' is missing"};
  }
  return {ToPosition(mark), "YAML syntax error: " + what};
}

Position ToPosition(const YAML::Mark& mark) {
  if (mark.line < 0 || mark.column < 0) return {};
  return {mark.line + 1, mark.column + 1};
}

Status ErrorSink::At(const Position& pos, const std::string& message) const {
  return Status::InvalidArgument(filename_ + ":" + std::to_string(pos.line) + ":" +
                                 std::to_string(pos.column) + ": " + message);
}

Position Field::value_pos() const {
  if (!value.IsDefined() || value.IsNull()) return key_pos;
  return ToPosition(value.Mark());
}

std::string Describe(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "null";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  std::string text = node.Scalar();
  if (text.size() > kMaxQuoted) text = text.substr(0, kMaxQuoted) + "...";
  return "\"" + text + "\"";
}

Result<Section> Section::Read(const ErrorSink& sink, const YAML::Node& node, Position where,
                              std::string context, std::string prefix,
                              const std::vector<std::string_view>& expected) {
  Section s;
  s.sink_ = &sink;
  s.where_ = where;
  s.context_ = std::move(context);
  s.prefix_ = std::move(prefix);
  if (!node.IsDefined() || node.IsNull()) return s;
  if (!node.IsMap()) {
    return sink.At(ToPosition(node.Mark()),
                   s.context_ + " must be a mapping, got " + Describe(node));
  }
  for (auto it = node.begin(); it != node.end(); ++it) {
    Position key_pos = ToPosition(it->first.Mark());
    if (!it->first.IsScalar()) {
      return sink.At(key_pos, "keys in " + s.context_ + " must be plain names");
    }
    const std::string& key = it->first.Scalar();
    if (const Field* prior = s.Find(key)) {
      return sink.At(key_pos, "duplicate field \"" + key + "\" in " + s.context_ +
                                  " (first set at line " + std::to_string(prior->key_pos.line) +
                                  ")");
    }
    if (std::find(expected.begin(), expected.end(), key) == expected.end()) {
      return sink.At(key_pos, "unknown field \"" + key + "\" in " + s.context_ +
                                  " (expected one of: " + JoinNames(expected) + ")");
    }
    s.fields_.push_back(Field{key, s.prefix_ + key, it->second, key_pos});
  }
  return s;
}

const Field* Section::Find(std::string_view key) const {
  for (const Field& f : fields_) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

Result<const Field*> Section::Require(std::string_view key) const {
  const Field* f = Find(key);
  if (f == nullptr) {
    return sink_->At(where_, "missing required field \"" + std::string(key) + "\" in " + context_);
  }
  return f;
}

// Absent keys leave the output untouched: the caller's default stands.
#define FARM_SECTION_FIELD_(key) \
  const Field* f = Find(key);    \
  if (f == nullptr) return Status::Ok()

Status Section::GetString(std::string_view key, std::string* out) const {
  FARM_SECTION_FIELD_(key);
  FARM_ASSIGN_OR_RETURN(*out, ReadString(*sink_, *f));
  return Status::Ok();
}

Status Section::GetInt(std::string_view key, int64_t min, int64_t max, int64_t* out) const {
  FARM_SECTION_FIELD_(key);
  FARM_ASSIGN_OR_RETURN(*out, ReadInt(*sink_, *f, min, max));
  return Status::Ok();
}

Status Section::GetNumber(std::string_view key, double min, double max, double* out) const {
  FARM_SECTION_FIELD_(key);
  FARM_ASSIGN_OR_RETURN(*out, ReadNumber(*sink_, *f, min, max));
  return Status::Ok();
}

Status Section::GetBool(std::string_view key, bool* out) const {
  FARM_SECTION_FIELD_(key);
  FARM_ASSIGN_OR_RETURN(*out, ReadBool(*sink_, *f));
  return Status::Ok();
}

Status Section::GetStringList(std::string_view key, std::vector<Item>* out) const {
  FARM_SECTION_FIELD_(key);
  FARM_ASSIGN_OR_RETURN(*out, ReadStringList(*sink_, *f));
  return Status::Ok();
}

#undef FARM_SECTION_FIELD_

Result<std::string> ReadString(const ErrorSink& sink, const Field& field) {
  if (!field.value.IsScalar()) return TypeError(sink, field, "a string");
  return field.value.Scalar();
}

Result<int64_t> ReadInt(const ErrorSink& sink, const Field& field, int64_t min, int64_t max) {
  if (!field.value.IsScalar()) return TypeError(sink, field, "an integer");
  const std::string& text = field.value.Scalar();
  int64_t v = 0;
  auto res = std::from_chars(text.data(), text.data() + text.size(), v);
  bool whole = res.ptr == text.data() + text.size() && !text.empty();
  if (res.ec == std::errc::invalid_argument || !whole) {
    return TypeError(sink, field, "an integer");
  }
  if (res.ec == std::errc::result_out_of_range || v < min || v > max) {
    return sink.At(field.value_pos(), "\"" + field.name + "\" must be between " +
                                          std::to_string(min) + " and " + std::to_string(max) +
                                          ", got " + text);
  }
  return v;
}

Result<double> ReadNumber(const ErrorSink& sink, const Field& field, double min, double max) {
  if (!field.value.IsScalar()) return TypeError(sink, field, "a number");
  const std::string& text = field.value.Scalar();
  double v = 0;
  auto res = std::from_chars(text.data(), text.data() + text.size(), v);
  bool whole = res.ptr == text.data() + text.size() && !text.empty();
  if (res.ec == std::errc::invalid_argument || !whole || !std::isfinite(v)) {
    return TypeError(sink, field, "a number");
  }
  if (res.ec == std::errc::result_out_of_range || v < min || v > max) {
    return sink.At(field.value_pos(), "\"" + field.name + "\" must be between " +
                                          FormatNumber(min) + " and " + FormatNumber(max) +
                                          ", got " + text);
  }
  return v;
}

Result<bool> ReadBool(const ErrorSink& sink, const Field& field) {
  if (field.value.IsScalar()) {
    const std::string& t = field.value.Scalar();
    if (t == "true" || t == "True" || t == "TRUE") return true;
    if (t == "false" || t == "False" || t == "FALSE") return false;
  }
  return TypeError(sink, field, "true or false");
}

Result<std::vector<Item>> ReadStringList(const ErrorSink& sink, const Field& field) {
  std::vector<Item> items;
  if (!field.value.IsDefined() || field.value.IsNull()) return items;
  if (!field.value.IsSequence()) return TypeError(sink, field, "a list");
  size_t index = 0;
  for (const YAML::Node& element : field.value) {
    std::string name = field.name + "[" + std::to_string(index++) + "]";
    Field item{name, name, element, ToPosition(element.Mark())};
    if (element.IsNull()) item.key_pos = field.value_pos();
    FARM_ASSIGN_OR_RETURN(std::string text, ReadString(sink, item));
    items.push_back(Item{std::move(text), item.value_pos()});
  }
  return items;
}

Result<std::vector<std::pair<Item, Item>>> ReadStringMap(const ErrorSink& sink,
                                                         const Field& field) {
  std::vector<std::pair<Item, Item>> out;
  if (!field.value.IsDefined() || field.value.IsNull()) return out;
  if (!field.value.IsMap()) return TypeError(sink, field, "a mapping");
  for (auto it = field.value.begin(); it != field.value.end(); ++it) {
    Position key_pos = ToPosition(it->first.Mark());
    if (!it->first.IsScalar()) {
      return sink.At(key_pos, "keys in " + field.name + " must be plain names");
    }
    const std::string& key = it->first.Scalar();
    for (const auto& [prior_key, prior_value] : out) {
      if (prior_key.text == key) {
        return sink.At(key_pos, "duplicate key \"" + key + "\" in " + field.name +
                                    " (first set at line " + std::to_string(prior_key.pos.line) +
                                    ")");
      }
    }
    Field value{key, field.name + "." + key, it->second, key_pos};
    FARM_ASSIGN_OR_RETURN(std::string text, ReadString(sink, value));
    out.emplace_back(Item{key, key_pos}, Item{std::move(text), value.value_pos()});
  }
  return out;
}

}  // namespace farm::recipe
