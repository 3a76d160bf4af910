// TimeZone: an IANA time zone read from the system's TZif files (RFC 8536), for cron
// schedules. GCC 12's libstdc++ has no std::chrono zones and TZ switching around
// localtime_r is process-global, so the farm reads the zone files itself: the explicit
// transitions, then the POSIX TZ rule of the file's footer for instants after them.
//
// Civil ("local") times are carried as seconds since 1970-01-01T00:00 of the local
// calendar, as if the zone were UTC; instants are Unix seconds.
//
// Thread-safety: a TimeZone is immutable after construction; share it freely.
#ifndef FARM_DAEMON_CRON_TIME_ZONE_H_
#define FARM_DAEMON_CRON_TIME_ZONE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace farm::cron {

struct CivilTime {
  int year = 1970;
  int month = 1;  // 1..12
  int day = 1;    // 1..31
  int hour = 0;
  int minute = 0;
  int second = 0;
};

// Days since 1970-01-01 of a proleptic Gregorian date, and back.
int64_t DaysFromCivil(int year, int month, int day);
CivilTime CivilFromSeconds(int64_t local_seconds);
int64_t SecondsFromCivil(const CivilTime& c);
int DaysInMonth(int year, int month);
// 0 = Sunday .. 6 = Saturday.
int WeekdayFromDays(int64_t days);

// How one local wall time maps to instants.
struct LocalMapping {
  enum Kind { kUnique, kSkipped, kRepeated };
  Kind kind = kUnique;
  // kUnique: the instant. kSkipped (the wall time falls in a gap): the instant the gap
  // ends. kRepeated: the earlier instant (first occurrence).
  int64_t first = 0;
  int64_t second = 0;  // kRepeated: the later instant
};

class TimeZone {
 public:
  // Reads `name` ("Europe/Berlin", "UTC") from `zoneinfo_dir`, or from $TZDIR, or from
  // /usr/share/zoneinfo when both are empty. "UTC" works without any file. On failure
  // returns InvalidArgument naming the zone (a malformed name, no such zone, a bad file).
  static Result<TimeZone> Load(const std::string& name, const std::string& zoneinfo_dir = "");
  // Parses TZif bytes (version 1 to 4).
  static Result<TimeZone> FromTzif(const std::string& name, std::string_view data);
  static TimeZone Utc();

  const std::string& name() const { return name_; }
  // Seconds east of UTC in effect at the instant.
  int32_t OffsetAt(int64_t unix_s) const;
  // "CEST", "EST", "+03".
  std::string AbbreviationAt(int64_t unix_s) const;
  int64_t ToLocal(int64_t unix_s) const { return unix_s + OffsetAt(unix_s); }
  LocalMapping FromLocal(int64_t local_s) const;
  // "2026-03-29 03:00:00 CEST".
  std::string FormatLocal(int64_t unix_s) const;

  // One rule of a POSIX TZ string's DST start or end ("M3.5.0/3", "J60", "59").
  struct DateRule {
    char kind = 'M';  // 'J' (1..365, no Feb 29), 'N' (0..365), 'M' (month.week.day)
    int a = 0, b = 0, c = 0;
    int32_t time = 7200;  // local seconds after midnight, may be negative or > 24 h
  };
  struct PosixRule {
    std::string std_abbr, dst_abbr;
    int32_t std_offset = 0;  // seconds east of UTC
    int32_t dst_offset = 0;
    bool has_dst = false;
    DateRule start, end;
  };

 private:
  struct Type {
    int32_t offset = 0;
    bool dst = false;
    std::string abbr;
  };
  Type TypeAt(int64_t unix_s) const;
  Type RuleTypeAt(int64_t unix_s) const;

  std::string name_;
  std::vector<int64_t> transitions_;  // ascending
  std::vector<uint8_t> transition_types_;
  std::vector<Type> types_;
  std::optional<PosixRule> rule_;
};

// Parses a POSIX TZ string ("CET-1CEST,M3.5.0,M10.5.0/3"). InvalidArgument when malformed.
Result<TimeZone::PosixRule> ParsePosixTz(std::string_view text);

}  // namespace farm::cron

#endif  // FARM_DAEMON_CRON_TIME_ZONE_H_
