#include "common/recipe/wheel_names.h"

#include <yaml-cpp/yaml.h>

#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "common/recipe/matrix.h"
#include "common/recipe/yaml_reader.h"
#include "common/wheel/identity.h"

namespace farm::recipe {
namespace {

// Where `path` ("publish", "local_version") sits in the recipe text; when `list_value` is
// set, the list element with that text. nullopt when it is not there (or the text does
// not parse, which ParseRecipe has already ruled out).
std::optional<Position> FindValue(const std::string& yaml, const std::vector<std::string>& path,
                                  const std::string& list_value = "") {
  try {
    YAML::Node node = YAML::Load(yaml);
    for (const std::string& key : path) {
      if (!node.IsMap()) return std::nullopt;
      node = node[key];
      if (!node.IsDefined()) return std::nullopt;
    }
    if (list_value.empty()) return ToPosition(node.Mark());
    if (!node.IsSequence()) return std::nullopt;
    for (const auto& item : node) {
      if (item.IsScalar() && item.Scalar() == list_value) return ToPosition(item.Mark());
    }
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

Status AtPosition(const ErrorSink& sink, std::optional<Position> pos, const std::string& message) {
  if (pos) return sink.At(*pos, message);
  return Status::InvalidArgument(sink.filename() + ": " + message);
}

// The placeholder that would tell cells `a` and `b` apart, in order of preference.
std::string MissingPlaceholder(const farm::v1::MatrixCell& a, const farm::v1::MatrixCell& b) {
  if (a.arch_list() != b.arch_list()) return "{arch}";
  if (a.cuda() != b.cuda()) return "{cuda_nodot}";
  if (a.torch() != b.torch()) return "{torch_nodot}";
  return "{variant}";
}

}  // namespace

Status CheckWheelNames(const farm::v1::Recipe& recipe,
                       const std::vector<farm::v1::MatrixCell>& cells, std::string_view filename,
                       bool arch_lists_from_request) {
  ErrorSink sink{std::string(filename)};
  const std::string& tmpl = recipe.publish().local_version_template();
  auto template_pos = [&] { return FindValue(recipe.yaml(), {"publish", "local_version"}); };
  // (python, platform, label) -> the first cell that gives it.
  std::map<std::tuple<std::string, std::string, std::string>, const farm::v1::MatrixCell*> seen;
  for (const farm::v1::MatrixCell& cell : cells) {
    auto images = wheel::ExpectedImages(cell);
    if (!images.ok()) continue;  // the matrix expansion has already refused such cells
    auto label = wheel::RecipeWheelLabel(recipe, cell, *images);
    if (!label.ok()) return AtPosition(sink, template_pos(), label.status().message());
    auto [it, fresh] = seen.emplace(std::make_tuple(cell.python(), cell.platform(), *label), &cell);
    if (fresh) continue;
    const farm::v1::MatrixCell& first = *it->second;
    std::string why = "cells " + DescribeCell(first) + " and " + DescribeCell(cell) +
                      " would build different wheels under one name (local version label \"+" +
                      *label + "\")";
    if (!tmpl.empty() && tmpl != wheel::kDefaultLabelTemplate) {
      return AtPosition(sink, template_pos(),
                        why + "; add " + MissingPlaceholder(first, cell) +
                            " to publish.local_version \"" + tmpl +
                            "\" (or remove it to use the "
                            "default " +
                            wheel::kDefaultLabelTemplate + ")");
    }
    std::string fix = "both build " + wheel::ArchLabel(*images) +
                      ": keep one of the arch lists \"" + first.arch_list() + "\" and \"" +
                      cell.arch_list() + "\"";
    if (arch_lists_from_request) {
      return Status::InvalidArgument(sink.filename() + ": " + why + "; " + fix + " in --arch-list");
    }
    return AtPosition(sink, FindValue(recipe.yaml(), {"matrix", "arch_lists"}, cell.arch_list()),
                      why + "; " + fix);
  }
  return Status::Ok();
}

}  // namespace farm::recipe
