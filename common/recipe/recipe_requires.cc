// The `requires:` section: other recipes whose built wheels this one needs.
#include "common/recipe/recipe_internal.h"

namespace farm::recipe {
namespace {

// `for:` is "build", "validation", "both", or a list of "build" and "validation".
Status ParseUse(const ErrorSink& sink, const Field& f, farm::v1::Requirement* r) {
  std::vector<Item> uses;
  if (f.value.IsSequence()) {
    FARM_ASSIGN_OR_RETURN(uses, ReadStringList(sink, f));
  } else {
    FARM_ASSIGN_OR_RETURN(std::string one, ReadString(sink, f));
    uses.push_back({one, f.value_pos()});
  }
  for (const Item& use : uses) {
    if (use.text == "build" || use.text == "both") r->set_for_build(true);
    if (use.text == "validation" || use.text == "both") r->set_for_validation(true);
    if (use.text != "build" && use.text != "validation" && use.text != "both") {
      return sink.At(use.pos, "\"" + f.name + "\" must be build, validation or both, got \"" +
                                  use.text + "\"");
    }
  }
  if (!r->for_build() && !r->for_validation()) {
    return sink.At(f.value_pos(), "\"" + f.name + "\" names no use (build, validation or both)");
  }
  return Status::Ok();
}

Status ParseRequirement(const Section& top, const Field& element, farm::v1::Requirement* r) {
  FARM_ASSIGN_OR_RETURN(Section s,
                        Section::Read(top.sink(), element.value, element.key_pos, element.name,
                                      element.name + ".", {"recipe", "version", "commit", "for"}));
  FARM_ASSIGN_OR_RETURN(const Field* recipe, s.Require("recipe"));
  FARM_ASSIGN_OR_RETURN(std::string name, ReadString(s.sink(), *recipe));
  if (name.empty()) return s.sink().At(recipe->value_pos(), "\"" + recipe->name + "\" is empty");
  r->set_recipe(name);
  FARM_RETURN_IF_ERROR(s.GetString("version", r->mutable_version()));
  FARM_RETURN_IF_ERROR(s.GetString("commit", r->mutable_commit()));
  const Field* use = s.Find("for");
  if (use == nullptr) {  // a wheel needed at build time is needed to run too
    r->set_for_build(true);
    r->set_for_validation(true);
    return Status::Ok();
  }
  return ParseUse(s.sink(), *use, r);
}

}  // namespace

Status ParseRequiresSection(const Section& top, farm::v1::Recipe* recipe) {
  const Field* f = top.Find("requires");
  if (f == nullptr || f->value.IsNull()) return Status::Ok();
  if (!f->value.IsSequence()) {
    return top.sink().At(f->value_pos(), "\"requires\" must be a list, got " + Describe(f->value));
  }
  size_t index = 0;
  for (const YAML::Node& node : f->value) {
    if (index >= kMaxRequirements) {
      return top.sink().At(
          ToPosition(node.Mark()),
          "\"requires\" names more than " + std::to_string(kMaxRequirements) + " recipes");
    }
    std::string name = "requires[" + std::to_string(index++) + "]";
    Field element{name, name, node, ToPosition(node.Mark())};
    farm::v1::Requirement* r = recipe->add_requirements();
    FARM_RETURN_IF_ERROR(ParseRequirement(top, element, r));
    for (int i = 0; i + 1 < recipe->requirements_size(); ++i) {
      if (recipe->requirements(i).recipe() == r->recipe()) {
        return top.sink().At(element.key_pos, "\"" + r->recipe() + "\" is required twice");
      }
    }
  }
  return Status::Ok();
}

}  // namespace farm::recipe
