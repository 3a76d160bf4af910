// Who untrusted commands run as: a recipe's build and validation, and what comes from an
// upstream (provisioning, resolving). A program running as root never runs them as root: they
// run as an unprivileged user (--build-user: a user name or UID:GID; by default
// "farm-build" when that user exists, else "nobody"), to which the job's workspace and
// its compile-cache namespace are given. The sandbox makes its mounts as root and then
// switches to that user with setpriv (no supplementary groups, no capabilities, no new
// privileges), so a build can neither read root-only host files that /etc or /usr show
// (/etc/shadow) nor write what root owns. A worker that is not root runs builds as itself.
// The same holds for farmd's resolver (--resolver-user).
#ifndef FARM_COMMON_SANDBOX_BUILD_USER_H_
#define FARM_COMMON_SANDBOX_BUILD_USER_H_

#include <sys/types.h>

#include <string>

#include "common/status.h"

namespace farm::sandbox {

struct BuildUser {
  bool switches = false;  // false: builds run as the worker's own user
  uid_t uid = 0;
  gid_t gid = 0;
  std::string name;  // for logs: "nobody (65534:65534)"
};

// Resolves --build-user for a worker whose effective uid is `euid`. `spec` is "auto" (the
// default), a user name, or UID:GID. A root worker gets a user other than root
// (InvalidArgument for root itself or an unknown name); a worker that is not root gets
// itself for "auto" and InvalidArgument for anything else (it cannot switch users).
Result<BuildUser> ResolveBuildUser(const std::string& spec, uid_t euid);

// Gives `path` to the build user: the entry itself, and with `recursive` everything below
// it, never following a link (lchown). Never a regular file that has other links and is not
// the user's already: a job's environment is made of links to a sealed snapshot that every
// later job of its cell uses, and a chown through one of them would hand the snapshot to
// this job (the user cannot make such links itself: it may not link a file it does not
// own and cannot write). Nothing when commands run as the caller's own user.
Status GiveToBuildUser(const BuildUser& user, const std::string& path, bool recursive);

// Gives the tree at `path`, which a command running as the build user wrote, to this
// process's user (root), never following a link, and removes the write bits of group and
// others: the user can then change nothing in it. Nothing when commands run as the
// caller's own user.
Status TakeBackFromBuildUser(const BuildUser& user, const std::string& path);

}  // namespace farm::sandbox

#endif  // FARM_COMMON_SANDBOX_BUILD_USER_H_
