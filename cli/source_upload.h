// The build request of a recipe file, as farmctl submit and farmctl schedules add send it:
// recipe text, patches and a validation script read beside the recipe, the matrix flags,
// and a local source (the recipe's `local:` or `tarball:` resolved next to the recipe, or
// --source-dir / --source-tarball) packed and uploaded to farmd, so that the request names
// the archive by sha256 and no worker ever reads a path of this machine.
#ifndef FARM_CLI_SOURCE_UPLOAD_H_
#define FARM_CLI_SOURCE_UPLOAD_H_

#include <string>
#include <vector>

#include "cli/commands.h"
#include "common/flags.h"
#include "common/recipe/recipe.h"
#include "common/status.h"
#include "farm/v1/client.pb.h"

namespace farm::cli {

// Reads the recipe at `recipe_path`, uploads its local source when it has one (saying on
// env.out, or env.err with --output json, how many bytes went and the archive's sha256)
// and returns the request. The validation script the recipe names must sit beside the
// recipe or in the source tree (checked here for local sources). Flags read: source-dir,
// source-tarball, exclude, no-gitignore, max-source-bytes, python, torch, cuda, arch-list,
// platform, priority, force.
Result<farm::v1::SubmitBuildRequest> PrepareBuildRequest(const CommandEnv& env, const Flags& flags,
                                                         const std::string& recipe_path);

// The request of one loaded recipe as it stands: recipe text, patches, validation script
// and its local source packed and uploaded. No matrix, priority or requirements.
Result<farm::v1::SubmitBuildRequest> PackRecipe(const CommandEnv& env, const Flags& flags,
                                                recipe::LoadedRecipe loaded);

// Resolves each `requires:` entry of `loaded` (requirements.cc) to a recipe file, checks its
// version and commit, packs it with PackRecipe (and its own requirements, recursively) into
// req->requirements. `chain` holds the recipe files being resolved, so a cycle is refused.
//
// An entry that contains '/' or ends in .yaml/.yml is a path relative to the requiring
// recipe's directory (a directory means its recipe.yaml). Any other entry is a catalog
// name: NAME/recipe.yaml is looked up in each directory of --catalog (repeatable), then
// of $FARM_CATALOG (':'-separated), then in the directory holding the requiring recipe's
// directory (so kernels/sageattention finds kernels/triton); the first found is used.
Status AddRequirements(const CommandEnv& env, const Flags& flags,
                       const recipe::LoadedRecipe& loaded, std::vector<std::string>* chain,
                       farm::v1::SubmitBuildRequest* req);

}  // namespace farm::cli

#endif  // FARM_CLI_SOURCE_UPLOAD_H_
