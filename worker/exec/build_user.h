// Who a recipe's commands run as. A worker running as root never runs them as root: they
// run as an unprivileged user (--build-user: a user name or UID:GID; by default
// "farm-build" when that user exists, else "nobody"), to which the job's workspace and
// its compile-cache namespace are given. The sandbox makes its mounts as root and then
// switches to that user with setpriv (no supplementary groups, no capabilities, no new
// privileges), so a build can neither read root-only host files that /etc or /usr show
// (/etc/shadow) nor write what root owns. A worker that is not root runs builds as itself.
#ifndef FARM_WORKER_EXEC_BUILD_USER_H_
#define FARM_WORKER_EXEC_BUILD_USER_H_

#include <sys/types.h>

#include <string>

#include "common/status.h"

namespace farm::agent {

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
// it, never following a link (lchown). Nothing when builds run as the worker's user.
Status GiveToBuildUser(const BuildUser& user, const std::string& path, bool recursive);

}  // namespace farm::agent

#endif  // FARM_WORKER_EXEC_BUILD_USER_H_
