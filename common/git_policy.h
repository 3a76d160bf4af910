// Which git repositories the farm fetches, and how it runs git on them. A recipe's git URL
// is written by whoever submitted it: farmd resolves its ref with `git ls-remote` and
// workers clone it. Both sides call CheckGitUrl before git ever sees the URL, run git with
// LockedGitEnv and LockedGitArgs (no system or global configuration, no credential
// helpers, no prompts, only the allowed transports), and farmd shows only
// SanitizedGitError of what git printed.
//
// Only remote repositories: https://host[:port]/path always; ssh (ssh://host/path or
// user@host:path) only where the operator allows it. Never a local path, file://,
// http://, git://, ext::, fd:: or any other transport, and never credentials in a URL.
// Pure functions; thread-safe.
#ifndef FARM_COMMON_GIT_POLICY_H_
#define FARM_COMMON_GIT_POLICY_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace farm::git {

struct GitPolicy {
  bool allow_ssh = false;  // farmd/farm-worker --git-ssh
  // A PEM file of certificate authorities https servers are checked against instead of
  // the system's (farmd/farm-worker --git-ca-file): a farm's own git server. Empty: the
  // system's.
  std::string ca_file;
  int64_t timeout_ms = 60'000;  // a whole git command (ls-remote, clone)
};

// OK when the farm may fetch `url` under `policy`; otherwise InvalidArgument saying which
// rule the URL breaks ("... is a local path; git sources must be remote https URLs").
Status CheckGitUrl(const std::string& url, const GitPolicy& policy);

// The complete environment git runs with: no system or global configuration, no prompts
// or askpass, only the allowed transports (GIT_ALLOW_PROTOCOL), ssh in batch mode with a
// connect timeout, `home` as HOME (a directory without git or ssh configuration) and the
// CA file when the policy names one.
std::map<std::string, std::string> LockedGitEnv(const GitPolicy& policy, const std::string& home);

// `-c` options that go right after "git": no credential helper, only the allowed
// protocols, no hooks or templates, transfers that stall are abandoned.
std::vector<std::string> LockedGitArgs(const GitPolicy& policy);

// One printable line (at most 200 characters) saying why a git command failed, from its
// exit status and stderr. Never echoes what the server or git printed beyond a fixed set
// of recognised causes ("the repository was not found", "authentication is required (the
// farm fetches without credentials)", "the host name does not resolve", ...).
std::string SanitizedGitError(const std::string& what, int exit_code, bool timed_out,
                              int64_t timeout_ms, const std::string& stderr_text);

}  // namespace farm::git

#endif  // FARM_COMMON_GIT_POLICY_H_
