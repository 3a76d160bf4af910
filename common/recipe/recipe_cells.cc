// The recipe's `cells:` block: settings for the cells that match a condition on their axes
// (docs/recipes.md, "Per-cell settings"). Read after everything else, since each entry is
// checked against the recipe it changes: an axis its matrix does not have, or a setting the
// recipe gives no way to apply, is refused here, at its position.
#include <set>
#include <string>
#include <vector>

#include "common/recipe/matrix.h"
#include "common/recipe/recipe.h"
#include "common/recipe/recipe_internal.h"
#include "common/recipe/yaml_reader.h"
#include "common/upstream/release_version.h"

namespace farm::recipe {
namespace {

// Entries a recipe may have; more is a mistake, not a matrix.
constexpr size_t kMaxCellEntries = 64;

const std::vector<std::string_view> kEntryKeys = {"when",      "env",     "build_requirements",
                                                  "arch_list", "timeout", "unrequested_archs"};
const std::vector<std::string_view> kConditionKeys = {"python",   "torch",      "cuda",
                                                      "platform", "arch_lists", "arch_list"};

// Whether the recipe's cells can have a value on `axis`: the matrix lists it, an include
// rule names it, or (torch) the axis follows the index.
bool HasAxis(const farm::v1::Recipe& recipe, std::string_view axis) {
  const farm::v1::MatrixAxes& m = recipe.matrix();
  if (axis == "python" && !m.python().empty()) return true;
  if (axis == "torch" && (!m.torch().empty() || m.has_torch_follow())) return true;
  if (axis == "cuda" && !m.cuda().empty()) return true;
  if (axis == "arch_lists" && !m.arch_lists().empty()) return true;
  if (axis == "platform" && !m.platform().empty()) return true;
  for (const farm::v1::MatrixRule& rule : m.include()) {
    if (rule.match().contains(std::string(axis))) return true;
  }
  return false;
}

Status NoSuchAxis(const ErrorSink& sink, const Field& f, std::string_view axis) {
  return sink.At(f.key_pos, "\"" + f.name + "\": the recipe's matrix has no " + std::string(axis) +
                                " axis, so no cell can match it");
}

// python, torch, cuda: a PEP 440 range ("">=2.14", ">=12.8,<13").
Status ParseRange(const ErrorSink& sink, const farm::v1::Recipe& recipe, const Field& f,
                  std::string* out) {
  FARM_ASSIGN_OR_RETURN(std::string text, ReadString(sink, f));
  if (!HasAxis(recipe, f.key)) return NoSuchAxis(sink, f, f.key);
  Result<upstream::VersionSpec> spec = upstream::VersionSpec::Parse(text);
  if (text.empty() || !spec.ok()) {
    return sink.At(f.value_pos(), "\"" + f.name + "\" must be a PEP 440 version range such as " +
                                      "\">=2.14\" or \">=12.8,<13\"" +
                                      (spec.ok() ? std::string() : ": " + spec.status().message()));
  }
  *out = text;
  return Status::Ok();
}

// platform, arch_lists: one value or a list of values, each well formed for the axis.
Status ParseValues(const ErrorSink& sink, const farm::v1::Recipe& recipe, const Field& f,
                   std::string_view axis, google::protobuf::RepeatedPtrField<std::string>* out) {
  std::vector<Item> items;
  if (f.value.IsScalar()) {
    FARM_ASSIGN_OR_RETURN(std::string one, ReadString(sink, f));
    items.push_back({one, f.value_pos()});
  } else {
    FARM_ASSIGN_OR_RETURN(items, ReadStringList(sink, f));
  }
  if (!HasAxis(recipe, axis)) return NoSuchAxis(sink, f, axis);
  if (items.empty()) return sink.At(f.value_pos(), "\"" + f.name + "\" names no value");
  for (const Item& item : items) {
    Status valid = CheckAxisValue(axis, item.text);
    if (!valid.ok()) return sink.At(item.pos, "\"" + f.name + "\": " + valid.message());
    *out->Add() = item.text;
  }
  return Status::Ok();
}

Status ParseCondition(const Section& entry, const farm::v1::Recipe& recipe,
                      farm::v1::CellCondition* when) {
  FARM_ASSIGN_OR_RETURN(const Field* f, entry.Require("when"));
  FARM_ASSIGN_OR_RETURN(Section s, Section::Read(entry.sink(), f->value, f->key_pos, f->name,
                                                 f->name + ".", kConditionKeys));
  if (!f->value.IsMap() || s.fields().empty()) {
    return entry.sink().At(f->value_pos(), "\"" + f->name +
                                               "\" must be a mapping of axis to condition "
                                               "(python, torch, cuda, platform, arch_lists)");
  }
  for (const Field& c : s.fields()) {
    if (c.key == "python" || c.key == "torch" || c.key == "cuda") {
      std::string* range = c.key == "python"  ? when->mutable_python()
                           : c.key == "torch" ? when->mutable_torch()
                                              : when->mutable_cuda();
      FARM_RETURN_IF_ERROR(ParseRange(s.sink(), recipe, c, range));
    }
    if (c.key == "platform") {
      FARM_RETURN_IF_ERROR(ParseValues(s.sink(), recipe, c, "platform", when->mutable_platform()));
    }
    if (c.key == "arch_lists" || c.key == "arch_list") {
      if (!when->arch_lists().empty()) {
        return s.sink().At(c.key_pos, "\"" + f->name + "\" names the arch list twice");
      }
      FARM_RETURN_IF_ERROR(
          ParseValues(s.sink(), recipe, c, "arch_lists", when->mutable_arch_lists()));
    }
  }
  return Status::Ok();
}

// build_requirements go into each matching cell's lock: only a provisioned recipe resolves
// one, and not one that installs its own lock file.
Status ParseCellRequirements(const Section& entry, const farm::v1::Recipe& recipe,
                             farm::v1::CellSettings* out) {
  const Field* f = entry.Find("build_requirements");
  if (f == nullptr) return Status::Ok();
  std::vector<Item> items;
  FARM_RETURN_IF_ERROR(entry.GetStringList("build_requirements", &items));
  if (!recipe.has_environment()) {
    return entry.sink().At(f->key_pos, "\"" + f->name +
                                           "\" needs an environment: block (the worker "
                                           "installs build requirements only into a "
                                           "provisioned environment)");
  }
  if (!recipe.environment().lock_path().empty()) {
    return entry.sink().At(f->key_pos, "\"" + f->name + "\" cannot apply: the cells install " +
                                           "environment.lock " + recipe.environment().lock_path() +
                                           " as it is; add them to that lock");
  }
  std::set<std::string> seen;
  return ParseBuildRequirementItems(entry.sink(), items, f->name, &seen,
                                    out->mutable_build_requirements());
}

// arch_list replaces the cell's arch list when the build is expanded, so its condition
// cannot name the arch list (it would no longer hold afterwards), and it needs a CUDA axis
// to be checked against.
Status ParseArchChange(const Section& entry, const farm::v1::Recipe& recipe,
                       farm::v1::CellSettings* out) {
  const Field* f = entry.Find("arch_list");
  if (f == nullptr) return Status::Ok();
  FARM_ASSIGN_OR_RETURN(std::string list, ReadString(entry.sink(), *f));
  Status valid = CheckAxisValue("arch_lists", list);
  if (list.empty() || !valid.ok()) {
    return entry.sink().At(
        f->value_pos(),
        "\"" + f->name + "\": " + (list.empty() ? "must not be empty" : valid.message()));
  }
  if (!HasAxis(recipe, "cuda")) {
    return entry.sink().At(f->key_pos, "\"" + f->name + "\" cannot apply: the recipe's " +
                                           "matrix has no cuda axis to build it with");
  }
  if (!out->when().arch_lists().empty()) {
    return entry.sink().At(f->key_pos, "\"" + f->name + "\" changes the arch list, so its " +
                                           "condition cannot name one; match on python, " +
                                           "torch, cuda or platform");
  }
  out->set_arch_list(list);
  return Status::Ok();
}

Status ParseEntry(const ErrorSink& sink, const Field& element, const farm::v1::Recipe& recipe,
                  farm::v1::CellSettings* out) {
  FARM_ASSIGN_OR_RETURN(Section s, Section::Read(sink, element.value, element.value_pos(),
                                                 element.name, element.name + ".", kEntryKeys));
  if (!element.value.IsMap()) {
    return sink.At(element.value_pos(),
                   "\"" + element.name + "\" must be a mapping, got " + Describe(element.value));
  }
  FARM_RETURN_IF_ERROR(s.Require("when").status());
  if (s.fields().size() < 2) {
    return sink.At(element.value_pos(), "\"" + element.name + "\" must set " +
                                            "something: env, build_requirements, " +
                                            "arch_list, timeout or unrequested_archs");
  }
  out->set_origin(element.name + " at line " + std::to_string(element.value_pos().line));
  FARM_RETURN_IF_ERROR(ParseCondition(s, recipe, out->mutable_when()));
  if (const Field* env = s.Find("env")) {
    FARM_RETURN_IF_ERROR(ParseEnvMap(sink, *env, out->mutable_env()));
  }
  FARM_RETURN_IF_ERROR(ParseCellRequirements(s, recipe, out));
  FARM_RETURN_IF_ERROR(ParseArchChange(s, recipe, out));
  int64_t timeout = 0;
  FARM_RETURN_IF_ERROR(s.GetInt("timeout", 1, kMaxTimeoutSeconds, &timeout));
  out->set_timeout_seconds(static_cast<int32_t>(timeout));
  if (const Field* policy = s.Find("unrequested_archs")) {
    FARM_ASSIGN_OR_RETURN(std::string text, ReadString(sink, *policy));
    if (text != "warn" && text != "fail") {
      return sink.At(policy->value_pos(),
                     "\"" + policy->name + "\" must be warn or fail, got \"" + text + "\"");
    }
    out->set_unrequested_archs(text);
  }
  return Status::Ok();
}

}  // namespace

Status ParseCellsSection(const Section& top, farm::v1::Recipe* recipe) {
  const Field* f = top.Find("cells");
  if (f == nullptr || f->value.IsNull()) return Status::Ok();
  if (!f->value.IsSequence()) {
    return top.sink().At(f->value_pos(), "\"cells\" must be a list of {when: ..., settings}, got " +
                                             Describe(f->value));
  }
  if (f->value.size() > kMaxCellEntries) {
    return top.sink().At(f->value_pos(), "\"cells\" has " + std::to_string(f->value.size()) +
                                             " entries; at most " +
                                             std::to_string(kMaxCellEntries) + " are accepted");
  }
  size_t index = 0;
  for (const YAML::Node& node : f->value) {
    std::string name = "cells[" + std::to_string(index++) + "]";
    Field element{name, name, node, ToPosition(node.Mark())};
    FARM_RETURN_IF_ERROR(ParseEntry(top.sink(), element, *recipe, recipe->add_cell_settings()));
  }
  return Status::Ok();
}

}  // namespace farm::recipe
