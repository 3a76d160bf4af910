// Typed, position-aware access to a yaml-cpp document for the recipe parser: every error
// is InvalidArgument "<file>:<line>:<column>: <message>" (1-based) pointing at the value
// (or key) at fault, and every mapping is checked for unknown and duplicate keys.
//
// Internal to farm_recipe. yaml-cpp throws; nothing here calls a throwing accessor, and
// the callers in recipe.cc still catch at their boundary. Objects are used by one thread.
#ifndef FARM_COMMON_RECIPE_YAML_READER_H_
#define FARM_COMMON_RECIPE_YAML_READER_H_

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace farm::recipe {

// A 1-based position in the recipe text.
struct Position {
  int line = 1;
  int column = 1;
};

// Converts a yaml-cpp mark (0-based, -1 when unknown) to a Position (1:1 when unknown).
Position ToPosition(const YAML::Mark& mark);

// Where and why yaml-cpp could not parse `yaml`, said so that a person finds the mistake:
// a tab in a line's indentation is named as a tab at that line (yaml-cpp reports "illegal
// map value" or "end of map not found" elsewhere), and a flow list or map that is never
// closed is reported at its '[' or '{' (yaml-cpp reports the line after it). Otherwise
// "YAML syntax error: <yaml-cpp's message>" at yaml-cpp's mark.
struct SyntaxError {
  Position pos;
  std::string message;
};
SyntaxError ExplainSyntaxError(std::string_view yaml, const YAML::Mark& mark,
                               const std::string& what);

// Formats "<filename>:<line>:<column>: <message>" errors.
class ErrorSink {
 public:
  explicit ErrorSink(std::string filename) : filename_(std::move(filename)) {}
  Status At(const Position& pos, const std::string& message) const;
  const std::string& filename() const { return filename_; }

 private:
  std::string filename_;
};

// A scalar with where it was written.
struct Item {
  std::string text;
  Position pos;
};

// One key: value pair of a mapping. `name` is the dotted path used in messages
// ("retry.max_attempts").
struct Field {
  std::string key;  // as written: "max_attempts"
  std::string name;
  YAML::Node value;
  Position key_pos;
  // The value's position; the key's when the value is null (yaml-cpp places null values
  // on the following line).
  Position value_pos() const;
};

// "null", "a list", "a mapping" or the quoted scalar text (shortened).
std::string Describe(const YAML::Node& node);

// The fields of one mapping, with unknown and duplicate keys already rejected.
class Section {
 public:
  // On success returns the section; fails when `node` is neither a mapping nor null, when
  // a key is not a scalar, repeats, or is not in `expected`. `context` names the mapping
  // in messages ("recipe", "source.git"); `prefix` is prepended to field names ("retry.").
  // `where` is reported for missing required fields.
  static Result<Section> Read(const ErrorSink& sink, const YAML::Node& node, Position where,
                              std::string context, std::string prefix,
                              const std::vector<std::string_view>& expected);

  const Field* Find(std::string_view key) const;
  // On success the field; "missing required field" at the section otherwise.
  Result<const Field*> Require(std::string_view key) const;
  Position where() const { return where_; }
  const std::string& context() const { return context_; }
  const std::string& prefix() const { return prefix_; }
  const std::vector<Field>& fields() const { return fields_; }
  const ErrorSink& sink() const { return *sink_; }

  // Each getter leaves `out` untouched when the key is absent and fails, pointing at the
  // value, when it has the wrong type or lies outside [min, max].
  Status GetString(std::string_view key, std::string* out) const;
  Status GetInt(std::string_view key, int64_t min, int64_t max, int64_t* out) const;
  Status GetNumber(std::string_view key, double min, double max, double* out) const;
  Status GetBool(std::string_view key, bool* out) const;
  Status GetStringList(std::string_view key, std::vector<Item>* out) const;

 private:
  const ErrorSink* sink_ = nullptr;
  Position where_;
  std::string context_;
  std::string prefix_;
  std::vector<Field> fields_;
};

// Typed readers over one field; errors name `field.name` and point at the value.
Result<std::string> ReadString(const ErrorSink& sink, const Field& field);
Result<int64_t> ReadInt(const ErrorSink& sink, const Field& field, int64_t min, int64_t max);
Result<double> ReadNumber(const ErrorSink& sink, const Field& field, double min, double max);
Result<bool> ReadBool(const ErrorSink& sink, const Field& field);
// A list of scalars; null reads as an empty list.
Result<std::vector<Item>> ReadStringList(const ErrorSink& sink, const Field& field);
// A mapping of scalar keys to scalar values (duplicates rejected); null reads as empty.
Result<std::vector<std::pair<Item, Item>>> ReadStringMap(const ErrorSink& sink, const Field& field);

}  // namespace farm::recipe

#endif  // FARM_COMMON_RECIPE_YAML_READER_H_
