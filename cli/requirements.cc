// farmctl's side of a recipe's `requires:`: each required recipe is found on this machine
// and travels in the request like the requiring one (docs/recipes.md#requires).
#include <cstdlib>
#include <filesystem>

#include "cli/source_upload.h"

namespace farm::cli {
namespace {

namespace stdfs = std::filesystem;

constexpr size_t kMaxDepth = 8;

bool IsPath(const std::string& entry) {
  return entry.find('/') != std::string::npos || entry.ends_with(".yaml") ||
         entry.ends_with(".yml");
}

std::vector<std::string> CatalogDirs(const Flags& flags, const recipe::LoadedRecipe& from) {
  std::vector<std::string> dirs = flags.GetAll("catalog");
  if (const char* env = std::getenv("FARM_CATALOG"); env != nullptr) {
    std::string list = env;
    for (size_t start = 0; start <= list.size();) {
      size_t end = list.find(':', start);
      if (end == std::string::npos) end = list.size();
      if (end > start) dirs.push_back(list.substr(start, end - start));
      start = end + 1;
    }
  }
  dirs.push_back(stdfs::path(from.directory).parent_path().string());
  return dirs;
}

Result<std::string> FindRequiredRecipe(const Flags& flags, const recipe::LoadedRecipe& from,
                                       const std::string& entry) {
  std::error_code ec;
  if (IsPath(entry)) {
    stdfs::path p =
        stdfs::path(entry).is_absolute() ? stdfs::path(entry) : stdfs::path(from.directory) / entry;
    if (stdfs::is_directory(p, ec)) p /= "recipe.yaml";
    if (!stdfs::is_regular_file(p, ec)) {
      return Status::NotFound(from.path + ": required recipe " + entry + " is not at " +
                              p.lexically_normal().string());
    }
    return stdfs::absolute(p).lexically_normal().string();
  }
  std::string looked;
  for (const std::string& dir : CatalogDirs(flags, from)) {
    stdfs::path p = stdfs::path(dir) / entry / "recipe.yaml";
    if (stdfs::is_regular_file(p, ec)) return stdfs::absolute(p).lexically_normal().string();
    looked += (looked.empty() ? "" : ", ") + p.lexically_normal().string();
  }
  return Status::NotFound(from.path + ": required recipe \"" + entry +
                          "\" is in no catalog (looked for " + looked +
                          "; add --catalog DIR or set FARM_CATALOG)");
}

// The pins of a requirement hold for the recipe found.
Status CheckPins(const farm::v1::Requirement& r, const recipe::LoadedRecipe& found,
                 const std::string& from) {
  const farm::v1::Recipe& got = found.recipe;
  if (!r.version().empty() && r.version() != got.version()) {
    return Status::FailedPrecondition(from + " requires " + r.recipe() + " version " + r.version() +
                                      ", but " + found.path + " is version \"" + got.version() +
                                      "\"");
  }
  if (!r.commit().empty() &&
      (!got.source().has_git() || !got.source().git().commit().starts_with(r.commit()))) {
    return Status::FailedPrecondition(from + " requires " + r.recipe() + " at commit " +
                                      r.commit() + ", but " + found.path + " builds " +
                                      (got.source().has_git()
                                           ? "commit \"" + got.source().git().commit() + "\""
                                           : "no git source"));
  }
  return Status::Ok();
}

}  // namespace

Status AddRequirements(const CommandEnv& env, const Flags& flags,
                       const recipe::LoadedRecipe& loaded, std::vector<std::string>* chain,
                       farm::v1::SubmitBuildRequest* req) {
  chain->push_back(loaded.path);
  for (const farm::v1::Requirement& r : loaded.recipe.requirements()) {
    FARM_ASSIGN_OR_RETURN(std::string path, FindRequiredRecipe(flags, loaded, r.recipe()));
    for (const std::string& seen : *chain) {
      if (seen == path) {
        return Status::InvalidArgument(loaded.path + ": requiring " + r.recipe() + " (" + path +
                                       ") makes a cycle");
      }
    }
    if (chain->size() >= kMaxDepth) {
      return Status::InvalidArgument(loaded.path + ": requirements nest deeper than " +
                                     std::to_string(kMaxDepth));
    }
    FARM_ASSIGN_OR_RETURN(recipe::LoadedRecipe found, recipe::LoadRecipeFile(path));
    FARM_RETURN_IF_ERROR(CheckPins(r, found, loaded.path));
    FARM_ASSIGN_OR_RETURN(farm::v1::SubmitBuildRequest sub, PackRecipe(env, flags, found));
    FARM_RETURN_IF_ERROR(AddRequirements(env, flags, found, chain, &sub));
    *req->add_requirements() = std::move(sub);
  }
  chain->pop_back();
  return Status::Ok();
}

}  // namespace farm::cli
