// SourceResolver: turns a git branch or tag into the commit it names right now, so a build
// key (and a schedule's record of its inputs) names exactly what is built.
// GitSourceResolver runs `git ls-remote` through a ProcessRunner.
//
// Thread-safety: GitSourceResolver may be called from several threads at once.
#ifndef FARM_DAEMON_SCHEDULE_SOURCE_RESOLVER_H_
#define FARM_DAEMON_SCHEDULE_SOURCE_RESOLVER_H_

#include <cstdint>
#include <string>

#include "common/process.h"
#include "common/status.h"

namespace farm::schedule {

class SourceResolver {
 public:
  virtual ~SourceResolver() = default;
  // On success the 40-hex commit `ref` (a branch, tag, full ref name or HEAD) of the
  // repository at `url` points to. NotFound when the repository has no such ref;
  // Unavailable when the repository cannot be read.
  virtual Result<std::string> ResolveGitRef(const std::string& url, const std::string& ref) = 0;
};

class GitSourceResolver final : public SourceResolver {
 public:
  explicit GitSourceResolver(ProcessRunner* runner, int64_t timeout_ms = 60000)
      : runner_(runner), timeout_ms_(timeout_ms) {}
  Result<std::string> ResolveGitRef(const std::string& url, const std::string& ref) override;

 private:
  ProcessRunner* runner_;
  int64_t timeout_ms_;
};

// Picks the commit of `ref` from `git ls-remote` output: refs/heads/REF, then the peeled
// refs/tags/REF^{}, then refs/tags/REF, then an exact full ref name. "" when absent.
std::string PickRef(const std::string& ls_remote_output, const std::string& ref);

}  // namespace farm::schedule

#endif  // FARM_DAEMON_SCHEDULE_SOURCE_RESOLVER_H_
