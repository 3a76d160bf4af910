// Running child processes: the seam between farm code and the OS process table.
// RealProcessRunner forks real processes; tests may substitute a fake where the behaviour
// under test is the caller's, never in integration tests.
//
// Every child runs in its own process group, so Kill() reaches the whole tree the command
// started (compilers spawned by pip, nvcc's children, ...).
#ifndef FARM_COMMON_PROCESS_H_
#define FARM_COMMON_PROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace farm {

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH of `env`
  std::string cwd;                // empty: inherit
  // The child's complete environment when `clear_env`, else added to the parent's.
  std::map<std::string, std::string> env;
  bool clear_env = false;
  std::string stdin_data;  // written then closed; empty: /dev/null
  // Grace between SIGTERM and SIGKILL when Wait() kills the child for its timeout.
  int64_t kill_grace_ms = 5000;
};

enum class OutputStream { kStdout, kStderr };

// Called for each complete line (without '\n'); a trailing partial line is delivered at
// exit. Called from the thread that runs Wait().
using LineCallback = std::function<void(OutputStream, const std::string&)>;

struct ProcessResult {
  int exit_code = -1;          // 128+N when killed by signal N
  int term_signal = 0;         // 0 when it exited normally
  int64_t peak_rss_bytes = 0;  // largest RSS of any descendant (getrusage children)
  bool timed_out = false;
  bool killed = false;  // Kill() was called
};

// A started child. Thread-safe: Kill() may be called from any thread while Wait() runs.
// When the child itself exits, whatever is left in its process group is killed (SIGKILL)
// before Wait() returns, so a command never leaves background processes behind.
class Process {
 public:
  virtual ~Process() = default;
  virtual pid_t pid() const = 0;
  // Reads output until the child exits (or `timeout_ms` > 0 elapses, then kills it) and
  // reaps it. Call once.
  virtual ProcessResult Wait(const LineCallback& on_line, int64_t timeout_ms) = 0;
  // Sends SIGTERM to the process group, then SIGKILL after `grace_ms`. The SIGKILL is
  // sent by Wait() (or the destructor), so a Kill() caller never blocks.
  virtual void Kill(int64_t grace_ms) = 0;
};

class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  // Starts the child. On failure (no such program, fork failed) returns the reason.
  virtual Result<std::unique_ptr<Process>> Start(const ProcessSpec& spec) = 0;
};

class RealProcessRunner final : public ProcessRunner {
 public:
  Result<std::unique_ptr<Process>> Start(const ProcessSpec& spec) override;
};

// Convenience: runs to completion, collecting stdout and stderr.
struct CapturedOutput {
  ProcessResult result;
  std::string out;
  std::string err;
};
Result<CapturedOutput> RunAndCapture(ProcessRunner& runner, const ProcessSpec& spec,
                                     int64_t timeout_ms);

// The first executable file named `name` in the colon-separated `path` ("" for none), or
// on this process's PATH when `path` is null. Relative entries of the path are skipped.
std::string FindInPath(const std::string& name, const char* path = nullptr);

}  // namespace farm

#endif  // FARM_COMMON_PROCESS_H_
