// Preparing a job's workspace: fetching the source (an uploaded archive, or git),
// applying patches with `git apply`, and creating the build's venv. Each step runs its
// tools through a ProcessRunner with a clean environment and forwards their output to the
// job log. One StepRunner per job thread; not shared between threads.
#ifndef FARM_WORKER_JOB_WORKSPACE_H_
#define FARM_WORKER_JOB_WORKSPACE_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/git_policy.h"
#include "common/process.h"
#include "common/status.h"
#include "farm/v1/types.pb.h"
#include "worker/job/job_control.h"

namespace farm::agent {

// Runs the helper tools of one job (git, tar, python -m venv).
class StepRunner {
 public:
  // `env` is the tools' complete environment; `control` (may be null) lets Stop() kill a
  // running tool; `on_line` (may be null) receives the tools' output.
  StepRunner(ProcessRunner& runner, std::map<std::string, std::string> env, JobControl* control,
             LineCallback on_line)
      : runner_(runner), env_(std::move(env)), control_(control), on_line_(std::move(on_line)) {}

  // Runs argv in `cwd`. On success OK; otherwise FailedPrecondition with the command's
  // last error line, Cancelled when the job was stopped, DeadlineExceeded on timeout.
  Status Run(const std::vector<std::string>& argv, const std::string& cwd,
             int64_t timeout_ms = 30 * 60 * 1000);

 private:
  ProcessRunner& runner_;
  std::map<std::string, std::string> env_;
  JobControl* control_;
  LineCallback on_line_;
};

// Downloads an uploaded source archive from farmd into a file, checked (FarmClient).
using ArchiveFetcher =
    std::function<Status(const farm::v1::SourceArchive& archive, const std::string& path)>;

// How a job clones git sources: `steps` runs git (inside the sandbox, with the network,
// where the job has one) with the environment git::LockedGitEnv, under `policy`.
struct GitFetch {
  StepRunner* steps = nullptr;
  git::GitPolicy policy;
};

// Puts the source into `dest` (created here): an uploaded archive is fetched beside `dest`,
// checked and unpacked under the hostile-archive rules (common/archive/source_archive.h;
// a single top-level directory becomes the root) and removed again; a git source whose
// URL the policy allows (git::CheckGitUrl: a remote https URL, never a local path or
// file://, whatever farmd passed on) is cloned with git::LockedGitArgs and checked out at
// its commit (or ref). A source that is a path on the client that submitted it is
// refused: a worker never reads a path someone else named. On failure returns why,
// naming the source.
Status FetchSource(StepRunner& steps, const GitFetch& git, const farm::v1::Source& source,
                   const std::string& dest, const ArchiveFetcher& fetch);

// Applies each patch in order with `git apply` in `src` (a git repository is initialised
// first when `src` is not one). Patch files are written under `patch_dir`. On failure
// returns FailedPrecondition naming the patch that did not apply.
Status ApplyPatches(StepRunner& steps, const std::vector<farm::v1::Patch>& patches,
                    const std::string& src, const std::string& patch_dir);

// Creates a fresh venv with `python` (with --system-site-packages when asked).
Status CreateVenv(StepRunner& steps, const std::string& python, bool system_site_packages,
                  const std::string& venv_dir);

}  // namespace farm::agent

#endif  // FARM_WORKER_JOB_WORKSPACE_H_
