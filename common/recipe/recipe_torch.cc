// The torch-related blocks of a recipe: `torch_abi:` (how the build depends on torch's C++
// ABI and Python's) and `environment:` (what the worker provisions per cell). Both are
// read after the matrix, whose values they are checked against.
#include <algorithm>
#include <cctype>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "common/arch.h"
#include "common/recipe/recipe_internal.h"
#include "common/recipe/yaml_reader.h"
#include "common/wheel/metadata/dependency.h"
#include "common/wheel/wheel_name.h"

namespace farm::recipe {
namespace {

// torch's stable ABI (STABLE_TORCH_LIBRARY, the C shim, TORCH_TARGET_VERSION targeting)
// first shipped with torch 2.9.
constexpr arch::Version kStableAbiFirst{2, 9};
// CPython's limited API, and with it the abi3 tag, starts at 3.2.
constexpr arch::Version kAbi3First{3, 2};

// "MAJOR.MINOR" exactly (no patch, no label), parsed.
Result<arch::Version> MajorMinor(const ErrorSink& sink, const Field& f, const std::string& what) {
  FARM_ASSIGN_OR_RETURN(std::string text, ReadString(sink, f));
  Result<arch::Version> v = arch::ParseVersion(text);
  if (!v.ok() || v->ToString() != text) {
    return sink.At(f.value_pos(),
                   "\"" + f.name + "\" must be the " + what + " as MAJOR.MINOR such as \"" +
                       (what == "Python version" ? "3.10" : "2.9") + "\", got \"" + text + "\"");
  }
  return *v;
}

Status CheckStableFloor(const Section& s, const Field& f, arch::Version floor,
                        const farm::v1::Recipe& recipe) {
  const ErrorSink& sink = s.sink();
  if (floor < kStableAbiFirst) {
    return sink.At(f.value_pos(), "\"torch_abi.stable\" is " + floor.ToString() +
                                      ", but torch's stable ABI starts with " +
                                      kStableAbiFirst.ToString() +
                                      "; a build for older torch is one build per torch "
                                      "(leave torch_abi.stable out)");
  }
  if (recipe.matrix().torch().empty()) {
    return sink.At(f.value_pos(),
                   "a stable-ABI build is validated with each torch of "
                   "matrix.torch from the floor up; list them there");
  }
  for (const std::string& t : recipe.matrix().torch()) {
    FARM_ASSIGN_OR_RETURN(arch::Version v, arch::ParseVersion(t));
    if (v < floor) {
      return sink.At(f.value_pos(), "matrix.torch lists " + t + ", below torch_abi.stable " +
                                        floor.ToString() +
                                        ": a wheel built for the stable ABI of " +
                                        floor.ToString() + " does not load there");
    }
  }
  const std::string& label = recipe.publish().local_version_template();
  for (const char* placeholder : {"{torch}", "{torch_nodot}"}) {
    if (label.find(placeholder) != std::string::npos) {
      return sink.At(f.value_pos(),
                     std::string("publish.local_version names ") + placeholder +
                         ", but a stable-ABI wheel serves every torch from the floor up; "
                         "use {variant} (which says \"torch" +
                         floor.ToString() + "andhigher\") or leave the torch out");
    }
  }
  return Status::Ok();
}

Status CheckAbi3(const Section& s, const Field& f, arch::Version abi3,
                 const farm::v1::TorchAbi& abi, const farm::v1::Recipe& recipe) {
  const ErrorSink& sink = s.sink();
  if (abi3.major != 3 || abi3 < kAbi3First) {
    return sink.At(f.value_pos(), "\"torch_abi.abi3\" is " + abi3.ToString() +
                                      ", but Python's limited API (abi3) exists from 3.2 on");
  }
  if (abi.stable_floor().empty()) {
    return sink.At(f.value_pos(),
                   "an abi3 wheel needs a build that uses only Python's limited API, and a "
                   "build against torch's full C++ API (torch/extension.h, pybind11) uses "
                   "the whole Python C API; build against torch's stable ABI "
                   "(torch_abi.stable) to tag the wheel abi3");
  }
  for (const std::string& py : recipe.matrix().python()) {
    FARM_ASSIGN_OR_RETURN(arch::Version v, arch::ParseVersion(py));
    if (v < abi3) {
      return sink.At(f.value_pos(), "matrix.python lists " + py + ", older than torch_abi.abi3 " +
                                        abi3.ToString() + ": a cp" + std::to_string(abi3.major) +
                                        std::to_string(abi3.minor) +
                                        "-abi3 wheel does not install there");
    }
  }
  return Status::Ok();
}

bool IsHex64(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
         });
}

bool IsPinVersion(std::string_view v) {
  return !v.empty() && std::isalnum(static_cast<unsigned char>(v[0])) &&
         std::all_of(v.begin(), v.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '+' || c == '!' ||
                  c == '_' || c == '-';
         });
}

// NAME==VERSION [--hash=sha256:HEX]: the project name, or "" when malformed.
std::string PinnedProject(std::string_view text) {
  std::string_view hash;
  size_t space = text.find(' ');
  if (space != std::string_view::npos) {
    hash = text.substr(space + 1);
    text = text.substr(0, space);
    if (!hash.starts_with("--hash=sha256:") || !IsHex64(hash.substr(14))) return "";
  }
  size_t eq = text.find("==");
  if (eq == 0 || eq == std::string_view::npos) return "";
  std::string_view name = text.substr(0, eq);
  bool name_ok =
      std::isalnum(static_cast<unsigned char>(name[0])) &&
      std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
      });
  return name_ok && IsPinVersion(text.substr(eq + 2)) ? wheel::NormalizeProjectName(name) : "";
}

Status ParseTorchMap(const Section& s, const farm::v1::Recipe& recipe,
                     farm::v1::EnvironmentSpec* env) {
  const Field* f = s.Find("torch");
  const auto& axis = recipe.matrix().torch();
  if (f == nullptr) {
    if (axis.empty()) return Status::Ok();
    return s.sink().At(s.where(),
                       "environment.torch must say which release each torch of "
                       "matrix.torch installs (\"" +
                           axis[0] + "\": \"" + axis[0] + ".0\" or newest)");
  }
  FARM_ASSIGN_OR_RETURN(auto pairs, ReadStringMap(s.sink(), *f));
  for (const auto& [key, value] : pairs) {
    if (std::find(axis.begin(), axis.end(), key.text) == axis.end()) {
      return s.sink().At(
          key.pos, "environment.torch names " + key.text + ", which matrix.torch does not list");
    }
    if (value.text != "newest") {
      Result<arch::Version> minor = arch::ParseVersion(key.text);
      Result<arch::Version> release = arch::ParseVersion(value.text);
      bool same_minor = minor.ok() && release.ok() && *minor == *release;
      bool plain = std::count(value.text.begin(), value.text.end(), '.') == 2 &&
                   std::all_of(value.text.begin(), value.text.end(), [](char c) {
                     return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
                   });
      if (!same_minor || !plain) {
        return s.sink().At(value.pos, "environment.torch." + key.text + " must be a " + key.text +
                                          ".PATCH release such as \"" + key.text +
                                          ".0\" (the CUDA variant comes from the cell) or "
                                          "newest, got \"" +
                                          value.text + "\"");
      }
    }
    (*env->mutable_torch())[key.text] = value.text;
  }
  for (const std::string& t : axis) {
    if (!env->torch().contains(t)) {
      return s.sink().At(f->value_pos(), "environment.torch does not say which release torch " + t +
                                             " of matrix.torch installs");
    }
  }
  return Status::Ok();
}

// Exact pins (`where` names the list in messages); a project in `outer` (the recipe's
// build_requirements, for a torch release's list) may not be pinned again.
Status ParsePins(const ErrorSink& sink, const std::vector<Item>& pins, const std::string& where,
                 const std::set<std::string>& outer, std::set<std::string>* seen,
                 google::protobuf::RepeatedPtrField<std::string>* out) {
  for (size_t i = 0; i < pins.size(); ++i) {
    const std::string at = where + "[" + std::to_string(i) + "]";
    std::string project = PinnedProject(pins[i].text);
    if (project.empty()) {
      return sink.At(pins[i].pos, at +
                                      " must be an exact pin NAME==VERSION, optionally "
                                      "followed by --hash=sha256:HEX, got \"" +
                                      pins[i].text + "\"");
    }
    if (project == "torch") {
      return sink.At(pins[i].pos, at + " pins torch; the cell's torch comes from "
                                       "environment.torch and its CUDA variant");
    }
    if (outer.contains(project)) {
      return sink.At(pins[i].pos,
                     at + " pins " + project + ", which environment.build_requirements pins");
    }
    if (!seen->insert(project).second) {
      return sink.At(pins[i].pos, at + " pins " + project + " a second time");
    }
    *out->Add() = pins[i].text;
  }
  return Status::Ok();
}

// environment.torch_requirements: {"2.8.0+cu128": [pins of what that torch requires]}.
Status ParseTorchRequirements(const Section& s, const std::set<std::string>& outer,
                              farm::v1::EnvironmentSpec* env) {
  const Field* f = s.Find("torch_requirements");
  if (f == nullptr || f->value.IsNull()) return Status::Ok();
  if (!f->value.IsMap()) {
    return s.sink().At(f->value_pos(),
                       "environment.torch_requirements must be a mapping of torch releases "
                       "(\"2.8.0+cu128\") to lists of pins");
  }
  static const std::regex release_re(R"(\d{1,3}\.\d{1,3}\.\d{1,3}\+[a-z0-9]{1,20})");
  for (auto it = f->value.begin(); it != f->value.end(); ++it) {
    Position pos = ToPosition(it->first.Mark());
    const std::string key = it->first.IsScalar() ? it->first.Scalar() : "";
    if (!std::regex_match(key, release_re)) {
      return s.sink().At(pos,
                         "environment.torch_requirements keys are torch releases with "
                         "their CUDA variant such as \"2.8.0+cu128\", got \"" +
                             key.substr(0, 60) + "\"");
    }
    if (env->torch_requirements().contains(key)) {
      return s.sink().At(pos, "environment.torch_requirements lists " + key + " twice");
    }
    const std::string where = "environment.torch_requirements." + key;
    FARM_ASSIGN_OR_RETURN(std::vector<Item> pins,
                          ReadStringList(s.sink(), Field{key, where, it->second, pos}));
    std::set<std::string> seen;
    farm::v1::PinList& list = (*env->mutable_torch_requirements())[key];
    FARM_RETURN_IF_ERROR(ParsePins(s.sink(), pins, where, outer, &seen, list.mutable_pins()));
  }
  return Status::Ok();
}

// environment.build_requirements: PEP 508 requirements ("setuptools>=64", "ninja", exact
// pins too) that farmd resolves with torch into each cell's lock. No URLs (every file comes
// from the cell's index), no torch (environment.torch says which).
Status ParseBuildRequirements(const Section& s, farm::v1::EnvironmentSpec* env) {
  std::vector<Item> items;
  FARM_RETURN_IF_ERROR(s.GetStringList("build_requirements", &items));
  std::set<std::string> seen;
  FARM_RETURN_IF_ERROR(ParseBuildRequirementItems(s.sink(), items, "environment.build_requirements",
                                                  &seen, env->mutable_build_requirements()));
  return ParseTorchRequirements(s, seen, env);
}

// environment.lock: a pylock.toml beside the recipe (PEP 751) the cells install instead of
// a lock farmd resolves. The client sends the file's text; here only its name is checked.
Status ParseLockPath(const Section& s, farm::v1::EnvironmentSpec* env) {
  const Field* f = s.Find("lock");
  if (f == nullptr || f->value.IsNull()) return Status::Ok();
  FARM_ASSIGN_OR_RETURN(std::string path, ReadString(s.sink(), *f));
  if (path.empty() || path.front() == '/' || path.find("..") != std::string::npos ||
      path.find('\0') != std::string::npos) {
    return s.sink().At(f->value_pos(),
                       "environment.lock must be a file beside the recipe (a relative path "
                       "without ..), got \"" +
                           path.substr(0, 100) + "\"");
  }
  env->set_lock_path(path);
  return Status::Ok();
}

}  // namespace

Status ParseBuildRequirementItems(const ErrorSink& sink, const std::vector<Item>& items,
                                  const std::string& where, std::set<std::string>* seen,
                                  google::protobuf::RepeatedPtrField<std::string>* out) {
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string at = where + "[" + std::to_string(i) + "]";
    Result<wheel::DependencySpec> dep = wheel::ParseDependency(items[i].text);
    if (!dep.ok()) {
      return sink.At(items[i].pos, at +
                                       " must be a PEP 508 requirement such as "
                                       "\"setuptools>=64\" (no URL): " +
                                       dep.status().message());
    }
    const std::string project = wheel::NormalizeProjectName(dep->name);
    if (project == "torch") {
      return sink.At(items[i].pos, at + " names torch; the cell's torch comes from "
                                        "environment.torch and its CUDA variant");
    }
    if (!seen->insert(project).second) {
      return sink.At(items[i].pos, at + " names " + project + " a second time");
    }
    *out->Add() = items[i].text;
  }
  return Status::Ok();
}

Status ParseTorchAbiSection(const Section& top, farm::v1::Recipe* recipe) {
  const Field* f = top.Find("torch_abi");
  if (f == nullptr) return Status::Ok();
  FARM_ASSIGN_OR_RETURN(Section s, Section::Read(top.sink(), f->value, f->key_pos, "torch_abi",
                                                 "torch_abi.", {"stable", "abi3", "pin"}));
  farm::v1::TorchAbi* abi = recipe->mutable_torch_abi();
  if (const Field* stable = s.Find("stable")) {
    FARM_ASSIGN_OR_RETURN(arch::Version floor, MajorMinor(s.sink(), *stable, "torch floor"));
    FARM_RETURN_IF_ERROR(CheckStableFloor(s, *stable, floor, *recipe));
    abi->set_stable_floor(floor.ToString());
  }
  if (const Field* abi3 = s.Find("abi3")) {
    FARM_ASSIGN_OR_RETURN(arch::Version v, MajorMinor(s.sink(), *abi3, "Python version"));
    FARM_RETURN_IF_ERROR(CheckAbi3(s, *abi3, v, *abi, *recipe));
    abi->set_abi3(v.ToString());
  }
  if (const Field* pin = s.Find("pin")) {
    FARM_ASSIGN_OR_RETURN(std::string how, ReadString(s.sink(), *pin));
    if (how != "minor" && how != "exact") {
      return s.sink().At(pin->value_pos(),
                         "\"torch_abi.pin\" must be minor (torch==X.Y.*) or exact "
                         "(torch==X.Y.Z), got \"" +
                             how + "\"");
    }
    if (!abi->stable_floor().empty()) {
      return s.sink().At(pin->value_pos(),
                         "\"torch_abi.pin\" is for builds per torch; a "
                         "stable-ABI wheel requires torch>=" +
                             abi->stable_floor());
    }
    abi->set_exact_pin(how == "exact");
  }
  return Status::Ok();
}

Status ParseEnvironmentSection(const Section& top, farm::v1::Recipe* recipe) {
  const Field* f = top.Find("environment");
  if (f == nullptr) return Status::Ok();
  FARM_ASSIGN_OR_RETURN(
      Section s,
      Section::Read(top.sink(), f->value, f->key_pos, "environment", "environment.",
                    {"torch", "build_requirements", "torch_requirements", "toolkit", "lock"}));
  if (recipe->matrix().python().empty()) {
    return s.sink().At(f->key_pos,
                       "a provisioned environment needs matrix.python: the "
                       "worker installs that Python for each cell");
  }
  if (recipe->system_site_packages()) {
    return s.sink().At(f->key_pos,
                       "a provisioned environment is the whole build environment; "
                       "system_site_packages would add the host's packages to it");
  }
  if (!recipe->container_image().empty()) {
    return s.sink().At(f->key_pos,
                       "a provisioned environment and container_image both say "
                       "where Python and torch come from; keep one");
  }
  farm::v1::EnvironmentSpec* env = recipe->mutable_environment();
  FARM_RETURN_IF_ERROR(ParseTorchMap(s, *recipe, env));
  bool toolkit = true;
  FARM_RETURN_IF_ERROR(s.GetBool("toolkit", &toolkit));
  env->set_no_toolkit(!toolkit);
  FARM_RETURN_IF_ERROR(ParseBuildRequirements(s, env));
  return ParseLockPath(s, env);
}

}  // namespace farm::recipe
