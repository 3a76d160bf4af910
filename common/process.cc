#include "common/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>

extern char** environ;

namespace farm {
namespace {

// After the child exits, output still buffered in the pipes (or written by a lingering
// descendant) is read for at most this long before the group is killed.
constexpr int64_t kLingerMs = 1000;
// Lines longer than this are split so one runaway line cannot exhaust memory.
constexpr size_t kMaxLine = 64 * 1024;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Status ErrnoStatus(const std::string& what, int err) {
  return Status::Internal(what + ": " + std::strerror(err));
}

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

std::map<std::string, std::string> ChildEnv(const ProcessSpec& spec) {
  std::map<std::string, std::string> env;
  if (!spec.clear_env) {
    for (char** e = environ; e && *e; ++e) {
      std::string kv = *e;
      size_t eq = kv.find('=');
      if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  }
  for (const auto& [k, v] : spec.env) env[k] = v;
  return env;
}

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// Resolves argv[0] against the child's PATH, as execvp would, but before fork.
Result<std::string> ResolveProgram(const std::string& name,
                                   const std::map<std::string, std::string>& env) {
  if (name.empty()) return Status::InvalidArgument("empty program name");
  if (name.find('/') != std::string::npos) {
    if (IsExecutableFile(name)) return name;
    return Status::NotFound("program " + name + " does not exist or is not executable");
  }
  auto it = env.find("PATH");
  std::string path = it == env.end() ? "/usr/local/bin:/usr/bin:/bin" : it->second;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (IsExecutableFile(candidate)) return candidate;
    start = end + 1;
  }
  return Status::NotFound("program " + name + " not found in PATH");
}

// Splits a byte stream into lines; the partial tail is kept until more bytes or Flush.
class LineSplitter {
 public:
  explicit LineSplitter(OutputStream stream) : stream_(stream) {}
  void Add(const char* data, size_t n, const LineCallback& cb) {
    buf_.append(data, n);
    size_t start = 0;
    for (size_t nl; (nl = buf_.find('\n', start)) != std::string::npos; start = nl + 1) {
      Emit(buf_.substr(start, nl - start), cb);
    }
    buf_.erase(0, start);
    while (buf_.size() >= kMaxLine) {
      Emit(buf_.substr(0, kMaxLine), cb);
      buf_.erase(0, kMaxLine);
    }
  }
  void Flush(const LineCallback& cb) {
    if (!buf_.empty()) Emit(buf_, cb);
    buf_.clear();
  }

 private:
  void Emit(const std::string& line, const LineCallback& cb) {
    if (cb) cb(stream_, line);
  }
  OutputStream stream_;
  std::string buf_;
};

class RealProcess final : public Process {
 public:
  RealProcess(pid_t pid, int out_fd, int err_fd, int in_fd, std::string stdin_data,
              int64_t grace_ms)
      : pid_(pid),
        out_fd_(out_fd),
        err_fd_(err_fd),
        in_fd_(in_fd),
        stdin_data_(std::move(stdin_data)),
        timeout_grace_ms_(grace_ms) {}

  ~RealProcess() override {
    {
      std::lock_guard lock(mu_);
      if (!reaped_) {
        ::kill(-pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        reaped_ = true;
      }
    }
    CloseFd(out_fd_);
    CloseFd(err_fd_);
    CloseFd(in_fd_);
  }

  pid_t pid() const override { return pid_; }

  void Kill(int64_t grace_ms) override {
    std::lock_guard lock(mu_);
    killed_ = true;
    Signal(SIGTERM, grace_ms);
  }

  ProcessResult Wait(const LineCallback& on_line, int64_t timeout_ms) override;

 private:
  // REQUIRES: mu_ held. Signals the group unless the child was reaped (its pid could
  // then belong to someone else).
  void Signal(int sig, int64_t grace_ms) {
    if (reaped_) return;
    ::kill(-pid_, sig);
    if (sig == SIGTERM) {
      int64_t deadline = NowMs() + std::max<int64_t>(grace_ms, 0);
      if (kill_deadline_ == 0 || deadline < kill_deadline_) kill_deadline_ = deadline;
    }
  }
  void PollOnce(LineSplitter& out, LineSplitter& err, const LineCallback& cb, int wait_ms);
  void WriteStdin();
  bool ChildExited();
  void Escalate();
  ProcessResult Reap();

  const pid_t pid_;
  int out_fd_, err_fd_, in_fd_;
  std::string stdin_data_;
  size_t stdin_written_ = 0;
  const int64_t timeout_grace_ms_;
  std::mutex mu_;
  bool reaped_ = false;        // guarded by mu_
  bool killed_ = false;        // guarded by mu_
  int64_t kill_deadline_ = 0;  // guarded by mu_; steady ms of the SIGKILL, 0: none
};

void RealProcess::WriteStdin() {
  while (in_fd_ >= 0 && stdin_written_ < stdin_data_.size()) {
    ssize_t n =
        ::write(in_fd_, stdin_data_.data() + stdin_written_, stdin_data_.size() - stdin_written_);
    if (n > 0) {
      stdin_written_ += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN) {
      return;
    } else {
      break;  // EPIPE: the child does not read its input
    }
  }
  CloseFd(in_fd_);
}

void RealProcess::PollOnce(LineSplitter& out, LineSplitter& err, const LineCallback& cb,
                           int wait_ms) {
  pollfd fds[3];
  int n = 0;
  if (out_fd_ >= 0) fds[n++] = {out_fd_, POLLIN, 0};
  if (err_fd_ >= 0) fds[n++] = {err_fd_, POLLIN, 0};
  if (in_fd_ >= 0) fds[n++] = {in_fd_, POLLOUT, 0};
  if (n == 0) {
    ::usleep(static_cast<useconds_t>(wait_ms) * 1000);
    return;
  }
  if (::poll(fds, n, wait_ms) <= 0) return;
  char buf[65536];
  for (int i = 0; i < n; ++i) {
    if (fds[i].revents == 0) continue;
    if (fds[i].fd == in_fd_) {
      WriteStdin();
      continue;
    }
    bool is_out = fds[i].fd == out_fd_;
    ssize_t r = ::read(fds[i].fd, buf, sizeof(buf));
    if (r > 0) {
      (is_out ? out : err).Add(buf, static_cast<size_t>(r), cb);
    } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
      (is_out ? out : err).Flush(cb);
      CloseFd(is_out ? out_fd_ : err_fd_);
    }
  }
}

// True once the child has exited; it stays a zombie (WNOWAIT) so its pid, which is also
// the group id, cannot be reused while the group is still signalled.
bool RealProcess::ChildExited() {
  siginfo_t info;
  std::memset(&info, 0, sizeof(info));
  int rc = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
  return rc == 0 && info.si_pid == pid_;
}

void RealProcess::Escalate() {
  std::lock_guard lock(mu_);
  if (kill_deadline_ != 0 && NowMs() >= kill_deadline_) Signal(SIGKILL, 0);
}

ProcessResult RealProcess::Reap() {
  ProcessResult result;
  int status = 0;
  struct rusage ru;
  std::memset(&ru, 0, sizeof(ru));
  std::lock_guard lock(mu_);
  ::kill(-pid_, SIGKILL);  // leftovers of the tree; the zombie still holds the group id
  pid_t r;
  do {
    r = ::wait4(pid_, &status, 0, &ru);
  } while (r < 0 && errno == EINTR);
  reaped_ = true;
  result.killed = killed_;
  result.peak_rss_bytes = static_cast<int64_t>(ru.ru_maxrss) * 1024;
  if (r == pid_ && WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (r == pid_ && WIFSIGNALED(status)) {
    result.term_signal = WTERMSIG(status);
    result.exit_code = 128 + result.term_signal;
  }
  return result;
}

ProcessResult RealProcess::Wait(const LineCallback& on_line, int64_t timeout_ms) {
  LineSplitter out(OutputStream::kStdout), err(OutputStream::kStderr);
  int64_t deadline = timeout_ms > 0 ? NowMs() + timeout_ms : 0;
  bool timed_out = false;
  int64_t exited_at = 0;
  WriteStdin();
  for (;;) {
    PollOnce(out, err, on_line, 50);
    if (deadline != 0 && !timed_out && NowMs() >= deadline) {
      timed_out = true;
      std::lock_guard lock(mu_);
      Signal(SIGTERM, timeout_grace_ms_);
    }
    Escalate();
    if (exited_at == 0 && ChildExited()) exited_at = NowMs();
    if (exited_at != 0 && ((out_fd_ < 0 && err_fd_ < 0) || NowMs() - exited_at >= kLingerMs)) {
      break;
    }
  }
  ProcessResult result = Reap();
  // Whatever the killed leftovers had written is still in the pipes.
  for (int i = 0; i < 10 && (out_fd_ >= 0 || err_fd_ >= 0); ++i) PollOnce(out, err, on_line, 20);
  out.Flush(on_line);
  err.Flush(on_line);
  CloseFd(out_fd_);
  CloseFd(err_fd_);
  CloseFd(in_fd_);
  result.timed_out = timed_out;
  return result;
}

struct Pipe {
  int fds[2] = {-1, -1};
  ~Pipe() {
    CloseFd(fds[0]);
    CloseFd(fds[1]);
  }
  Status Open() {
    if (::pipe2(fds, O_CLOEXEC) != 0) return ErrnoStatus("pipe", errno);
    return Status::Ok();
  }
};

// Runs in the child between fork and exec: only async-signal-safe calls.
[[noreturn]] void ExecChild(const char* prog, char* const* argv, char* const* envp, const char* cwd,
                            int in_fd, int out_fd, int err_fd, int report_fd) {
  ::setpgid(0, 0);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD}) ::signal(sig, SIG_DFL);
  if (::dup2(in_fd, 0) < 0 || ::dup2(out_fd, 1) < 0 || ::dup2(err_fd, 2) < 0) {
    int e = errno;
    (void)!::write(report_fd, &e, sizeof(e));
    ::_exit(127);
  }
  if (cwd != nullptr && ::chdir(cwd) != 0) {
    int e = errno;
    (void)!::write(report_fd, &e, sizeof(e));
    ::_exit(127);
  }
  ::execve(prog, argv, envp);
  int e = errno;
  (void)!::write(report_fd, &e, sizeof(e));
  ::_exit(127);
}

// Owns the C arrays execve needs, built before fork so the child allocates nothing.
struct ExecArgs {
  std::vector<std::string> env_strings;
  std::vector<char*> argv, envp;
  ExecArgs(const ProcessSpec& spec, const std::map<std::string, std::string>& env) {
    for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
    for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
  }
};

}  // namespace

Result<std::unique_ptr<Process>> RealProcessRunner::Start(const ProcessSpec& spec) {
  if (spec.argv.empty()) return Status::InvalidArgument("empty command");
  auto env = ChildEnv(spec);
  FARM_ASSIGN_OR_RETURN(std::string prog, ResolveProgram(spec.argv[0], env));
  ExecArgs args(spec, env);
  Pipe in, out, err, report;
  FARM_RETURN_IF_ERROR(out.Open());
  FARM_RETURN_IF_ERROR(err.Open());
  FARM_RETURN_IF_ERROR(report.Open());
  int devnull = -1;
  if (spec.stdin_data.empty()) {
    devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull < 0) return ErrnoStatus("open /dev/null", errno);
  } else {
    FARM_RETURN_IF_ERROR(in.Open());
  }
  int child_in = devnull >= 0 ? devnull : in.fds[0];
  const char* cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    CloseFd(devnull);
    return ErrnoStatus("fork", e);
  }
  if (pid == 0) {
    ExecChild(prog.c_str(), args.argv.data(), args.envp.data(), cwd, child_in, out.fds[1],
              err.fds[1], report.fds[1]);
  }
  ::setpgid(pid, pid);  // also done by the child; whichever runs first wins the race
  CloseFd(devnull);
  CloseFd(in.fds[0]);
  CloseFd(out.fds[1]);
  CloseFd(err.fds[1]);
  CloseFd(report.fds[1]);
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(report.fds[0], &child_errno, sizeof(child_errno));
  } while (n < 0 && errno == EINTR);
  if (n > 0) {
    ::waitpid(pid, nullptr, 0);
    return Status::FailedPrecondition("cannot start " + spec.argv[0] +
                                      (cwd ? " in " + spec.cwd : std::string()) + ": " +
                                      std::strerror(child_errno));
  }
  if (in.fds[1] >= 0) ::fcntl(in.fds[1], F_SETFL, O_NONBLOCK);
  auto process = std::make_unique<RealProcess>(pid, out.fds[0], err.fds[0], in.fds[1],
                                               spec.stdin_data, spec.kill_grace_ms);
  out.fds[0] = err.fds[0] = in.fds[1] = -1;  // now owned by the process
  return std::unique_ptr<Process>(std::move(process));
}

Result<CapturedOutput> RunAndCapture(ProcessRunner& runner, const ProcessSpec& spec,
                                     int64_t timeout_ms) {
  FARM_ASSIGN_OR_RETURN(auto process, runner.Start(spec));
  CapturedOutput captured;
  captured.result = process->Wait(
      [&captured](OutputStream stream, const std::string& line) {
        (stream == OutputStream::kStdout ? captured.out : captured.err) += line + "\n";
      },
      timeout_ms);
  return captured;
}

std::string FindInPath(const std::string& name, const char* path) {
  if (path == nullptr) path = ::getenv("PATH");
  if (path == nullptr || name.empty() || name.find('/') != std::string::npos) return "";
  std::string dirs = path;
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    start = end + 1;
    if (dir.empty() || dir[0] != '/') continue;  // a relative entry depends on the cwd
    std::string candidate = dir + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return "";
}

}  // namespace farm
