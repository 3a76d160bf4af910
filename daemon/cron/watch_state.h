// What an upstream watch has seen (docs/schedules.md "Watches"), kept in the schedule's
// row and written in the same transaction as the run a change fired, so a watch fires
// once per upstream change whatever crashes in between: a change committed with its run
// is never fired again, one not committed is seen again at the next poll.
//
// Text form, one record per line (bounded; unknown or malformed lines are dropped):
//   primed                      the first poll happened (it builds nothing)
//   failures N                  polls failed in a row (the backoff)
//   etag URL<TAB>ETAG           the validator of the page `seen` reflects
//   seen KEY                    an item seen ("torch cu130 2.10.0", "tag v1.2 <commit>")
#ifndef FARM_DAEMON_CRON_WATCH_STATE_H_
#define FARM_DAEMON_CRON_WATCH_STATE_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>

namespace farm::cron {

// More seen keys than this and only the current ones are kept (an index lists a few
// hundred torch files per variant).
inline constexpr size_t kMaxSeenKeys = 20000;

struct WatchState {
  bool primed = false;
  int failures = 0;
  std::map<std::string, std::string> etags;
  std::set<std::string> seen;

  std::string Serialize() const;
  static WatchState Parse(const std::string& text);
};

// For people: "4 upstream items seen", "not polled yet", "... ; 3 polls failed in a row".
std::string DescribeWatchState(const WatchState& state);

// The delay before the next poll: `period_ms` after a success, doubled per failure in a
// row up to 64 periods and at most six hours.
int64_t NextPollDelayMs(int64_t period_ms, int failures);

}  // namespace farm::cron

#endif  // FARM_DAEMON_CRON_WATCH_STATE_H_
