// The file side of recipes: reading a recipe with its patches (farmctl) and matching
// patches a client supplied to the recipe that names them (farmd).
#include <filesystem>
#include <map>
#include <string>
#include <system_error>

#include "common/fs.h"
#include "common/recipe/recipe.h"
#include "common/recipe/recipe_internal.h"
#include "common/recipe/yaml_reader.h"

namespace farm::recipe {
namespace {

namespace stdfs = std::filesystem;

// `path` made absolute against `dir` when relative, without touching the file system.
std::string Resolve(const stdfs::path& dir, const std::string& path) {
  stdfs::path p(path);
  return (p.is_absolute() ? p : dir / p).lexically_normal().string();
}

Status ResolveSource(const ErrorSink& sink, const stdfs::path& dir, const Position& pos,
                     farm::v1::Source* source) {
  std::error_code ec;
  if (source->has_local_path()) {
    std::string abs = Resolve(dir, source->local_path());
    if (!stdfs::is_directory(abs, ec)) {
      return sink.At(pos, "source directory \"" + source->local_path() +
                              "\" not found (looked for " + abs + ")");
    }
    source->set_local_path(abs);
  } else if (source->has_tarball_path()) {
    std::string abs = Resolve(dir, source->tarball_path());
    if (!stdfs::is_regular_file(abs, ec)) {
      return sink.At(pos, "source tarball \"" + source->tarball_path() +
                              "\" not found (looked for " + abs + ")");
    }
    source->set_tarball_path(abs);
  }
  return Status::Ok();
}

Status ReadPatch(const ErrorSink& sink, const stdfs::path& dir, const Position& pos,
                 farm::v1::Patch* patch) {
  std::string abs = Resolve(dir, patch->name());
  std::error_code ec;
  if (!stdfs::is_regular_file(abs, ec)) {
    return sink.At(pos, "patch file \"" + patch->name() + "\" not found (looked for " + abs + ")");
  }
  Result<std::string> content = fs::ReadFile(abs);
  if (!content.ok())
    return sink.At(pos, "patch file \"" + patch->name() + "\": " + content.status().message());
  if (content->empty()) return sink.At(pos, "patch file \"" + patch->name() + "\" is empty");
  patch->set_content(std::move(content).value());
  return Status::Ok();
}

// A script beside the recipe is sent with it; one that is not there is looked for in the
// source tree by the worker.
Status ReadValidationScript(const ErrorSink& sink, const stdfs::path& dir, const Position& pos,
                            farm::v1::ValidationSpec* spec) {
  if (spec->script().empty()) return Status::Ok();
  std::string abs = Resolve(dir, spec->script());
  std::error_code ec;
  if (!stdfs::is_regular_file(abs, ec)) return Status::Ok();
  Result<std::string> content = fs::ReadFile(abs);
  if (!content.ok()) {
    return sink.At(pos,
                   "validation script \"" + spec->script() + "\": " + content.status().message());
  }
  if (content->size() > kMaxValidationScriptBytes) {
    return sink.At(pos, "validation script \"" + spec->script() + "\" is larger than " +
                            std::to_string(kMaxValidationScriptBytes) + " bytes");
  }
  spec->set_script_content(std::move(content).value());
  return Status::Ok();
}

// environment.lock names a file beside the recipe: it travels with the recipe.
Status ReadEnvironmentLock(const ErrorSink& sink, const stdfs::path& dir,
                           farm::v1::EnvironmentSpec* env) {
  if (env->lock_path().empty()) return Status::Ok();
  std::string abs = Resolve(dir, env->lock_path());
  std::error_code ec;
  if (!stdfs::is_regular_file(abs, ec)) {
    return sink.At(Position{}, "environment.lock \"" + env->lock_path() +
                                   "\" not found (looked for " + abs + ")");
  }
  Result<std::string> content = fs::ReadFile(abs);
  if (!content.ok()) {
    return sink.At(Position{},
                   "environment.lock \"" + env->lock_path() + "\": " + content.status().message());
  }
  if (static_cast<int64_t>(content->size()) > kMaxEnvironmentLockBytes) {
    return sink.At(Position{}, "environment.lock \"" + env->lock_path() + "\" is larger than " +
                                   std::to_string(kMaxEnvironmentLockBytes) + " bytes");
  }
  env->set_lock(std::move(content).value());
  return Status::Ok();
}

}  // namespace

Result<LoadedRecipe> LoadRecipeFile(const std::string& path) {
  Result<std::string> yaml = fs::ReadFile(path);
  if (!yaml.ok()) {
    return Status(yaml.status().code(), "recipe " + yaml.status().message());
  }
  FARM_ASSIGN_OR_RETURN(ParsedRecipe parsed, ParseRecipeWithPositions(yaml.value(), path));
  std::error_code ec;
  stdfs::path abs = stdfs::absolute(path, ec).lexically_normal();
  if (ec) return Status::Internal("cannot make " + path + " absolute: " + ec.message());
  LoadedRecipe out;
  out.path = abs.string();
  out.directory = abs.parent_path().string();
  ErrorSink sink(path);
  farm::v1::Recipe& recipe = parsed.recipe;
  FARM_RETURN_IF_ERROR(
      ResolveSource(sink, out.directory, parsed.source_pos, recipe.mutable_source()));
  for (int i = 0; i < recipe.patches_size(); ++i) {
    FARM_RETURN_IF_ERROR(
        ReadPatch(sink, out.directory, parsed.patch_pos[i], recipe.mutable_patches(i)));
  }
  FARM_RETURN_IF_ERROR(
      ReadValidationScript(sink, out.directory, Position{}, recipe.mutable_validation()));
  if (recipe.has_environment()) {
    FARM_RETURN_IF_ERROR(ReadEnvironmentLock(sink, out.directory, recipe.mutable_environment()));
  }
  out.recipe = std::move(recipe);
  return out;
}

Status CheckSourceIsContent(const farm::v1::Source& source) {
  if (!source.has_local_path() && !source.has_tarball_path()) return Status::Ok();
  return Status::InvalidArgument(
      "the source \"" + (source.has_local_path() ? source.local_path() : source.tarball_path()) +
      "\" is a path on the submitting machine, which no worker can read: farmctl submit and "
      "farmctl schedules add upload it; otherwise name a git repository");
}

Status AttachValidationScript(farm::v1::Recipe* recipe, const std::string& script) {
  if (script.empty()) return Status::Ok();
  if (recipe->validation().script().empty()) {
    return Status::InvalidArgument("a validation script was supplied but the recipe names none");
  }
  if (script.size() > kMaxValidationScriptBytes) {
    return Status::InvalidArgument("validation script " + recipe->validation().script() +
                                   " is larger than " + std::to_string(kMaxValidationScriptBytes) +
                                   " bytes");
  }
  recipe->mutable_validation()->set_script_content(script);
  return Status::Ok();
}

Status AttachEnvironmentLock(farm::v1::Recipe* recipe, const std::string& text) {
  if (text.empty()) {
    if (recipe->environment().lock_path().empty()) return Status::Ok();
    return Status::InvalidArgument("environment.lock names " + recipe->environment().lock_path() +
                                   ", which the request does not carry (farmctl sends it)");
  }
  if (recipe->environment().lock_path().empty()) {
    return Status::InvalidArgument("a lock was supplied but the recipe names no environment.lock");
  }
  if (static_cast<int64_t>(text.size()) > kMaxEnvironmentLockBytes) {
    return Status::InvalidArgument("environment.lock is larger than " +
                                   std::to_string(kMaxEnvironmentLockBytes) + " bytes");
  }
  recipe->mutable_environment()->set_lock(text);
  return Status::Ok();
}

Status AttachPatches(farm::v1::Recipe* recipe,
                     const google::protobuf::RepeatedPtrField<farm::v1::Patch>& supplied) {
  std::map<std::string, const farm::v1::Patch*> by_name;
  for (const farm::v1::Patch& p : supplied) {
    if (!by_name.emplace(p.name(), &p).second) {
      return Status::InvalidArgument("patch \"" + p.name() + "\" was supplied twice");
    }
  }
  for (farm::v1::Patch& wanted : *recipe->mutable_patches()) {
    auto it = by_name.find(wanted.name());
    if (it == by_name.end()) {
      return Status::InvalidArgument("patch \"" + wanted.name() +
                                     "\" named by the recipe was not supplied");
    }
    if (it->second->content().empty()) {
      return Status::InvalidArgument("patch \"" + wanted.name() + "\" is empty");
    }
    wanted.set_content(it->second->content());
    by_name.erase(it);
  }
  if (!by_name.empty()) {
    return Status::InvalidArgument("patch \"" + by_name.begin()->first +
                                   "\" was supplied but the recipe does not name it");
  }
  return Status::Ok();
}

}  // namespace farm::recipe
