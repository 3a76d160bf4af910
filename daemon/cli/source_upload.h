// The build request of a recipe file, as farmctl submit and farmctl schedules add send it:
// recipe text, patches and a validation script read beside the recipe, the matrix flags,
// and a local source (the recipe's `local:` or `tarball:` resolved next to the recipe, or
// --source-dir / --source-tarball) packed and uploaded to farmd, so that the request names
// the archive by sha256 and no worker ever reads a path of this machine.
#ifndef FARM_DAEMON_CLI_SOURCE_UPLOAD_H_
#define FARM_DAEMON_CLI_SOURCE_UPLOAD_H_

#include <string>

#include "common/flags.h"
#include "common/status.h"
#include "daemon/cli/commands.h"
#include "farm/v1/client.pb.h"

namespace farm::cli {

// Reads the recipe at `recipe_path`, uploads its local source when it has one (saying on
// env.out, or env.err with --output json, how many bytes went and the archive's sha256)
// and returns the request. The validation script the recipe names must sit beside the
// recipe or in the source tree (checked here for local sources). Flags read: source-dir,
// source-tarball, exclude, no-gitignore, max-source-bytes, python, torch, cuda, arch-list,
// platform, priority, force.
Result<farm::v1::SubmitBuildRequest> PrepareBuildRequest(const CommandEnv& env,
                                                         const Flags& flags,
                                                         const std::string& recipe_path);

}  // namespace farm::cli

#endif  // FARM_DAEMON_CLI_SOURCE_UPLOAD_H_
