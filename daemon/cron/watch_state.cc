#include "daemon/cron/watch_state.h"

#include <algorithm>
#include <sstream>

namespace farm::cron {
namespace {

constexpr size_t kMaxLineBytes = 4096;
constexpr int64_t kMaxBackoffMs = 6LL * 3600 * 1000;

bool Printable(const std::string& s) {
  return std::none_of(s.begin(), s.end(), [](char c) { return c == '\n' || c == '\r'; });
}

}  // namespace

std::string WatchState::Serialize() const {
  std::string out = "v1\n";
  if (primed) out += "primed\n";
  if (failures > 0) out += "failures " + std::to_string(failures) + "\n";
  for (const auto& [url, etag] : etags) {
    if (Printable(url) && Printable(etag) && url.find('\t') == std::string::npos) {
      out += "etag " + url + "\t" + etag + "\n";
    }
  }
  for (const std::string& key : seen) {
    if (Printable(key)) out += "seen " + key + "\n";
  }
  return out;
}

WatchState WatchState::Parse(const std::string& text) {
  WatchState state;
  std::istringstream in(text);
  std::string line;
  for (size_t i = 0; i < kMaxSeenKeys + 1000 && std::getline(in, line); ++i) {
    if (line.size() > kMaxLineBytes) continue;
    if (line == "primed") {
      state.primed = true;
    } else if (line.rfind("failures ", 0) == 0) {
      state.failures = std::clamp(std::atoi(line.c_str() + 9), 0, 1000);
    } else if (line.rfind("etag ", 0) == 0) {
      size_t tab = line.find('\t');
      if (tab != std::string::npos) state.etags[line.substr(5, tab - 5)] = line.substr(tab + 1);
    } else if (line.rfind("seen ", 0) == 0) {
      state.seen.insert(line.substr(5));
    }
  }
  return state;
}

std::string DescribeWatchState(const WatchState& state) {
  std::string out = state.primed ? std::to_string(state.seen.size()) + " upstream item(s) seen"
                                 : "not polled yet";
  if (state.failures > 0) {
    out += "; the last " + std::to_string(state.failures) + " poll(s) failed";
  }
  return out;
}

int64_t NextPollDelayMs(int64_t period_ms, int failures) {
  int shift = std::clamp(failures, 0, 6);
  return std::min(period_ms << shift, std::max(period_ms, kMaxBackoffMs));
}

}  // namespace farm::cron
