// SourceResolver: turns a git branch or tag into the commit it names right now, so a build
// key (and a schedule's record of its inputs) names exactly what is built.
// GitSourceResolver runs `git ls-remote` through a ProcessRunner, only on URLs the farm's
// git policy allows (common/git_policy.h: remote https, ssh where configured), with git
// locked down (no configuration, credentials or prompts), bounded in time, and says why it
// failed in one fixed, sanitised line, never in git's or the server's words.
//
// Thread-safety: GitSourceResolver may be called from several threads at once.
#ifndef FARM_DAEMON_CRON_SOURCE_RESOLVER_H_
#define FARM_DAEMON_CRON_SOURCE_RESOLVER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/git_policy.h"
#include "common/process.h"
#include "common/status.h"

namespace farm::cron {

class SourceResolver {
 public:
  virtual ~SourceResolver() = default;
  // On success the 40-hex commit `ref` (a branch, tag, full ref name or HEAD) of the
  // repository at `url` points to. NotFound when the repository has no such ref;
  // Unavailable when the repository cannot be read; InvalidArgument for a URL the farm
  // does not fetch; FailedPrecondition when resolution is turned off.
  virtual Result<std::string> ResolveGitRef(const std::string& url, const std::string& ref) = 0;
  // The branches and tags of the repository at `url`, full ref name ("refs/tags/v1.0") to
  // the commit it names (annotated tags peeled). Errors as ResolveGitRef's; resolvers that
  // cannot list answer Unimplemented.
  virtual Result<std::map<std::string, std::string>> ListRefs(const std::string& url) {
    (void)url;
    return Status::Unimplemented("this resolver cannot list a repository's refs");
  }
};

class GitSourceResolver final : public SourceResolver {
 public:
  // `enabled` false (farmd --no-git-resolve): farmd runs no git at all, and only a full
  // commit id "resolves" (to itself).
  GitSourceResolver(ProcessRunner* runner, git::GitPolicy policy, bool enabled = true)
      : runner_(runner), policy_(std::move(policy)), enabled_(enabled) {}
  Result<std::string> ResolveGitRef(const std::string& url, const std::string& ref) override;
  Result<std::map<std::string, std::string>> ListRefs(const std::string& url) override;

 private:
  // `git ls-remote <options> -- URL <patterns>`'s output, bounded.
  Result<std::string> LsRemote(const std::string& url, const std::vector<std::string>& options,
                               const std::vector<std::string>& patterns);

  ProcessRunner* runner_;
  const git::GitPolicy policy_;
  const bool enabled_;
};

// Picks the commit of `ref` from `git ls-remote` output: refs/heads/REF, then the peeled
// refs/tags/REF^{}, then refs/tags/REF, then an exact full ref name. "" when absent.
std::string PickRef(const std::string& ls_remote_output, const std::string& ref);

// Every ref of `git ls-remote` output, full name to commit, a tag's peeled "^{}" line
// winning over the tag object.
std::map<std::string, std::string> ParseRefs(const std::string& ls_remote_output);

}  // namespace farm::cron

#endif  // FARM_DAEMON_CRON_SOURCE_RESOLVER_H_
