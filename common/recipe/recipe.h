// Recipes: the YAML a client submits, parsed into farm.v1.Recipe exactly per the agreed
// format (docs/recipes.md). farmctl calls LoadRecipeFile to read a recipe with its patch
// files (and a validation script that sits beside it); farmd calls ParseRecipe on the
// submitted text, AttachPatches with the patches the client sent and
// AttachValidationScript, so workers only ever see the parsed message.
//
// Every error is InvalidArgument "<file>:<line>:<column>: <message>" (1-based) for problems
// inside the YAML, or "<file>: <message>" for problems outside it (a missing patch file).
// Pure functions apart from LoadRecipeFile, which reads files; all are thread-safe and
// never throw.
#ifndef FARM_COMMON_RECIPE_RECIPE_H_
#define FARM_COMMON_RECIPE_RECIPE_H_

#include <google/protobuf/repeated_ptr_field.h>

#include <string>
#include <string_view>

#include "common/status.h"
#include "farm/v1/types.pb.h"

namespace farm::recipe {

// Limits that keep an absurd recipe from reaching the scheduler.
inline constexpr size_t kMaxRecipeBytes = 1 << 20;
inline constexpr int64_t kDefaultTimeoutSeconds = 3600;
inline constexpr int64_t kMaxTimeoutSeconds = 7 * 24 * 3600;
inline constexpr double kDefaultGbPerCompileJob = 4.0;
inline constexpr int32_t kDefaultMaxAttempts = 3;
inline constexpr int32_t kDefaultBackoffSeconds = 10;
inline constexpr double kDefaultMinCosine = 0.99;
inline constexpr double kDefaultMaxRelativeL1 = 0.07;
// GPU memory a validation script is assumed to need when its recipe does not say: a CUDA
// context, torch's allocator and the test tensors of an attention kernel.
inline constexpr double kDefaultValidationGpuGb = 8.0;
inline constexpr double kMaxGpuMemoryGb = 4096;

// Whether `name` is a recipe name: [a-z0-9][a-z0-9._-]*, at most 100 characters.
bool IsRecipeName(std::string_view name);

// Parses recipe text. `filename` only prefixes error messages. On success returns the
// recipe with defaults filled in (timeout 3600, gb_per_compile_job 4, ccache true, retry
// 3 attempts / 10 s; validation thresholds 0.99 / 0.07 when a validation block is given,
// and gpu_memory_gb 8 when it names a script),
// `yaml` set to the text as given, source paths exactly as written, and one Patch per
// named patch file with empty content.
Result<farm::v1::Recipe> ParseRecipe(std::string_view yaml, std::string_view filename);

// A recipe read from disk, ready to submit: the recipe's yaml() goes into
// SubmitBuildRequest.recipe_yaml, its patches() into .patches and its source() into
// .source (paths there are absolute, so farmd needs no knowledge of the client's files).
struct LoadedRecipe {
  farm::v1::Recipe recipe;
  std::string path;       // the recipe file, absolute
  std::string directory;  // the directory relative paths were resolved against
};

// Reads and parses the recipe file at `path`. Relative local/tarball source paths are made
// absolute against the recipe's directory and must exist (a directory for local, a file for
// tarball); each patch file is read into Patch.content. Fails with NotFound when the
// recipe file is missing, InvalidArgument naming the position of a missing or empty
// patch or source otherwise.
Result<LoadedRecipe> LoadRecipeFile(const std::string& path);

// Fills the content of each patch `recipe` names from `supplied` (matched by name).
// Fails with InvalidArgument when a named patch is not supplied or is empty, or when a
// supplied patch is not named by the recipe.
Status AttachPatches(farm::v1::Recipe* recipe,
                     const google::protobuf::RepeatedPtrField<farm::v1::Patch>& supplied);

// InvalidArgument when `source` is still a path on the submitting machine (a local
// directory or tarball, which no worker can read: farmctl uploads those and names the
// archive instead); OK for git sources, uploaded archives and no source.
Status CheckSourceIsContent(const farm::v1::Source& source);

// Largest validation script a client may send with a recipe.
inline constexpr size_t kMaxValidationScriptBytes = 1 << 20;

// Stores the validation script the client read beside the recipe (empty: the script is in
// the source tree). Fails with InvalidArgument when a script is supplied but the recipe
// names none, or when it is larger than kMaxValidationScriptBytes.
Status AttachValidationScript(farm::v1::Recipe* recipe, const std::string& script);

// Largest environment.lock (a pylock.toml) a client may send with a recipe.
inline constexpr int64_t kMaxEnvironmentLockBytes = int64_t{4} << 20;

// Stores the text of the recipe's environment.lock the client read beside it. InvalidArgument
// when a lock is supplied for a recipe that names none, when the recipe names one and none
// is supplied, or when it is larger than kMaxEnvironmentLockBytes. Its content is checked
// where it is used (farmd's locker).
Status AttachEnvironmentLock(farm::v1::Recipe* recipe, const std::string& text);

}  // namespace farm::recipe

#endif  // FARM_COMMON_RECIPE_RECIPE_H_
