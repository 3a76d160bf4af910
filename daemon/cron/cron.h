// CronExpr: a five-field cron expression (minute hour day-of-month month day-of-week) or
// a macro (@hourly, @daily, @nightly, @weekly, @monthly, @yearly), and the computation of
// its next fire time in a time zone.
//
// Syntax: each field is a comma-separated list of `*`, `N`, `N-M`, with an optional
// `/STEP` (`*/15`, `10-50/20`, `5/10` = `5-59/10`). Months accept JAN..DEC and days of the
// week SUN..SAT (0 and 7 are Sunday), case-insensitive. As in Vixie cron, when both
// day-of-month and day-of-week are restricted (neither starts with `*`), a day matches
// when either does. @nightly is 03:00 every day.
//
// Daylight-saving rule (the one cronie applies; docs/schedules.md): an expression whose
// hour field is restricted fires once per matching wall time — a wall time skipped by a
// spring-forward change fires at the instant the gap ends, and a wall time repeated by a
// fall-back change fires only at its first occurrence. An expression whose hour field
// covers every hour (`*`) follows real time: nothing fires for skipped wall times and
// repeated wall times fire at both occurrences.
//
// Thread-safety: immutable after Parse; share freely.
#ifndef FARM_DAEMON_CRON_CRON_H_
#define FARM_DAEMON_CRON_CRON_H_

#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "daemon/cron/time_zone.h"

namespace farm::cron {

class CronExpr {
 public:
  // On success the parsed expression. On failure InvalidArgument with the position,
  // e.g. "field 2 (hour), column 4: 25 is out of range 0-23" (columns are 1-based in
  // `text`), or a message saying the expression can never fire.
  static Result<CronExpr> Parse(std::string_view text);

  const std::string& text() const { return text_; }
  // The five-field form of the expression ("0 3 * * *" for @nightly).
  const std::string& fields() const { return fields_; }

  // The first fire instant (Unix seconds) strictly after `after_unix_s` in `zone`.
  // NotFound when there is none within 10 years (impossible for a parsed expression).
  Result<int64_t> NextFire(const TimeZone& zone, int64_t after_unix_s) const;

  // Whether a local calendar day matches the day-of-month, month and day-of-week fields.
  bool MatchesDay(int year, int month, int day) const;

 private:
  void CollectInstants(const TimeZone& zone, int64_t local_s, int64_t after, int64_t* best) const;

  std::string text_;
  std::string fields_;
  std::bitset<60> minutes_;
  std::bitset<24> hours_;
  std::bitset<32> days_;     // 1..31
  std::bitset<13> months_;   // 1..12
  std::bitset<7> weekdays_;  // 0 = Sunday
  bool day_star_ = false;
  bool weekday_star_ = false;
};

}  // namespace farm::cron

#endif  // FARM_DAEMON_CRON_CRON_H_
