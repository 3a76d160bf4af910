#include "worker/job/build_progress.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "common/fs.h"
#include "worker/cache/compile_cache.h"

namespace farm::agent {
namespace {

namespace stdfs = std::filesystem;

constexpr int64_t kMaxUnits = 100'000'000;

// Skips spaces and ANSI escape sequences ("\x1b[32m") at `i`.
size_t SkipDecoration(const std::string& s, size_t i) {
  while (i < s.size()) {
    if (s[i] == ' ' || s[i] == '\t' || s[i] == '\r') {
      ++i;
    } else if (s[i] == '\x1b' && i + 1 < s.size() && s[i + 1] == '[') {
      i += 2;
      while (i < s.size() && !std::isalpha(static_cast<unsigned char>(s[i]))) ++i;
      if (i < s.size()) ++i;
    } else {
      break;
    }
  }
  return i;
}

// Reads decimal digits at `i` (at most 9); false when there are none.
bool ReadNumber(const std::string& s, size_t* i, int64_t* out) {
  size_t start = *i;
  int64_t v = 0;
  while (*i < s.size() && std::isdigit(static_cast<unsigned char>(s[*i])) && *i - start < 9) {
    v = v * 10 + (s[*i] - '0');
    ++*i;
  }
  *out = v;
  return *i > start;
}

// Key fields of /proc/<pid>/stat and status: the parent pid and the peak RSS.
struct ProcInfo {
  pid_t ppid = 0;
  int64_t hwm_bytes = 0;
};

std::optional<ProcInfo> ReadProc(const std::string& dir) {
  auto stat = fs::ReadFile(dir + "/stat");
  if (!stat.ok()) return std::nullopt;
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the
  // last ')'.
  size_t close = stat->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(stat->substr(close + 1));
  std::string state;
  ProcInfo info;
  if (!(fields >> state >> info.ppid)) return std::nullopt;
  std::ifstream status(dir + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) != 0) continue;
    std::istringstream kb(line.substr(6));
    int64_t v = 0;
    if (kb >> v) info.hwm_bytes = v * 1024;
    break;
  }
  return info;
}

// Compiles that went through the compile cache (hits and misses; links and version queries
// are no units), from the statistics log in the job's workspace: read while the build runs,
// so never through a link and never a FIFO or an endless file (ReadJobStatsLog).
int64_t CompilesDone(const std::string& workspace) {
  auto text = ReadJobStatsLog(workspace);
  if (!text.ok()) return 0;
  farm::v1::CompileCacheStats stats = ParseStatsLog(*text);
  return stats.hits() + stats.misses();
}

}  // namespace

std::optional<std::pair<int64_t, int64_t>> ParseUnitsLine(const std::string& line) {
  size_t i = SkipDecoration(line, 0);
  if (i >= line.size() || line[i] != '[') return std::nullopt;
  int64_t done = 0, total = 0;
  ++i;
  while (i < line.size() && line[i] == ' ') ++i;
  if (!ReadNumber(line, &i, &done)) return std::nullopt;
  if (i >= line.size() || line[i] != '/') return std::nullopt;
  ++i;
  if (!ReadNumber(line, &i, &total)) return std::nullopt;
  if (i >= line.size() || line[i] != ']') return std::nullopt;
  if (total <= 0 || done > total || total > kMaxUnits) return std::nullopt;
  return std::make_pair(done, total);
}

int64_t TreePeakRssBytes(pid_t root, const std::string& proc_dir) {
  if (root <= 0) return 0;
  std::map<pid_t, std::vector<pid_t>> children;
  std::map<pid_t, int64_t> hwm;
  std::error_code ec;
  for (const auto& e : stdfs::directory_iterator(proc_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    auto info = ReadProc(e.path().string());
    if (!info) continue;  // the process ended meanwhile
    pid_t pid = static_cast<pid_t>(std::stol(name));
    children[info->ppid].push_back(pid);
    hwm[pid] = info->hwm_bytes;
  }
  int64_t peak = 0;
  std::vector<pid_t> todo = {root};
  for (size_t n = 0; !todo.empty() && n < 1'000'000; ++n) {
    pid_t pid = todo.back();
    todo.pop_back();
    peak = std::max(peak, hwm[pid]);
    for (pid_t child : children[pid]) todo.push_back(child);
  }
  return peak;
}

void BuildProgress::Begin(pid_t pid, const std::string& cache_workspace) {
  std::lock_guard lock(mu_);
  pid_ = pid;
  cache_workspace_ = cache_workspace;
}

void BuildProgress::OnLine(const std::string& line) {
  auto units = ParseUnitsLine(line);
  if (!units) return;
  std::lock_guard lock(mu_);
  // Each ninja run counts from 1 (a setup.py with two extensions runs ninja twice): a
  // count that falls starts a new run, added after the units of the runs before it.
  if (units->first < done_ - base_) base_ = total_;
  done_ = base_ + units->first;
  total_ = base_ + units->second;
}

void BuildProgress::End() {
  std::lock_guard lock(mu_);
  pid_ = 0;
}

void BuildProgress::Sample() {
  pid_t pid;
  {
    std::lock_guard lock(mu_);
    pid = pid_;
  }
  if (pid <= 0) return;
  int64_t rss = TreePeakRssBytes(pid, proc_dir_);
  std::lock_guard lock(mu_);
  peak_rss_ = std::max(peak_rss_, rss);
}

ProgressSnapshot BuildProgress::Snapshot() const {
  ProgressSnapshot snap;
  std::string workspace;
  {
    std::lock_guard lock(mu_);
    snap = {done_, total_, peak_rss_};
    workspace = cache_workspace_;
  }
  if (snap.units_total == 0 && !workspace.empty()) snap.units_done = CompilesDone(workspace);
  return snap;
}

}  // namespace farm::agent
