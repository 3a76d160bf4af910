// Cron parsing and next fire times, checked against instants computed independently with
// timegm(), across the 2026 daylight-saving changes of Europe/Berlin (last Sundays of
// March and October, 01:00 UTC) and America/New_York (March 8 and November 1, 2 a.m.).
#include "daemon/cron/cron.h"

#include <gtest/gtest.h>

#include <ctime>
#include <string>

#include "tests/support/test_util.h"

namespace farm::cron {
namespace {

// "2026-03-29T01:00:00Z" -> Unix seconds, by the C library.
int64_t Utc(const std::string& iso) {
  std::tm tm{};
  EXPECT_NE(strptime(iso.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm), nullptr) << iso;
  return static_cast<int64_t>(timegm(&tm));
}

std::string Iso(int64_t s) {
  std::time_t t = static_cast<std::time_t>(s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

struct Case {
  const char* zone;
  const char* expr;
  const char* after;
  const char* next;
  const char* why;
};

const Case kCases[] = {
    {"UTC", "0 3 * * *", "2026-01-10T05:00:00Z", "2026-01-11T03:00:00Z",
     "daily, already past today"},
    {"UTC", "0 3 * * *", "2026-01-10T02:59:59Z", "2026-01-10T03:00:00Z", "daily, later today"},
    {"UTC", "0 3 * * *", "2026-01-10T03:00:00Z", "2026-01-11T03:00:00Z", "strictly after"},
    {"UTC", "@hourly", "2026-01-10T05:00:00Z", "2026-01-10T06:00:00Z", "@hourly"},
    {"UTC", "@daily", "2026-12-31T23:59:00Z", "2027-01-01T00:00:00Z", "@daily over new year"},
    {"UTC", "@weekly", "2026-01-07T12:00:00Z", "2026-01-11T00:00:00Z", "@weekly: Sunday 00:00"},
    {"UTC", "@monthly", "2026-01-31T00:00:00Z", "2026-02-01T00:00:00Z", "@monthly"},
    {"UTC", "@yearly", "2026-06-01T00:00:00Z", "2027-01-01T00:00:00Z", "@yearly"},
    {"UTC", "*/15 9-17 * * 1-5", "2026-01-09T17:45:00Z", "2026-01-12T09:00:00Z",
     "Friday evening to Monday"},
    {"UTC", "5,10-12,*/20 * * * *", "2026-01-10T05:12:00Z", "2026-01-10T05:20:00Z",
     "lists, ranges, steps"},
    {"UTC", "10-50/20 * * * *", "2026-01-10T05:31:00Z", "2026-01-10T05:50:00Z", "range with step"},
    {"UTC", "5/20 * * * *", "2026-01-10T05:26:00Z", "2026-01-10T05:45:00Z", "N/step = N-59/step"},
    {"UTC", "0 0 13 * FRI", "2026-02-01T00:00:00Z", "2026-02-06T00:00:00Z",
     "dom or dow (Vixie): Friday 6th"},
    {"UTC", "0 0 13 * FRI", "2026-02-07T00:00:00Z", "2026-02-13T00:00:00Z",
     "dom or dow: 13th (also a Friday)"},
    {"UTC", "0 0 */10 * MON", "2026-02-02T00:00:01Z", "2026-05-11T00:00:00Z",
     "dom starting with * is ANDed"},
    {"UTC", "0 0 29 2 *", "2026-01-01T00:00:00Z", "2028-02-29T00:00:00Z", "leap day"},
    {"UTC", "30 4 1 jan,Jul sun-sat", "2026-02-01T00:00:00Z", "2026-07-01T04:30:00Z",
     "names, any case"},
    {"UTC", "0 12 * * 7", "2026-01-05T00:00:00Z", "2026-01-11T12:00:00Z", "7 is Sunday"},
    {"Europe/Berlin", "@nightly", "2026-01-10T00:00:00Z", "2026-01-10T02:00:00Z",
     "@nightly = 03:00 CET"},
    {"Europe/Berlin", "@nightly", "2026-07-10T00:00:00Z", "2026-07-10T01:00:00Z",
     "@nightly = 03:00 CEST"},
    // Spring forward, Berlin 2026-03-29: 02:00 CET -> 03:00 CEST at 01:00Z.
    {"Europe/Berlin", "30 2 * * *", "2026-03-28T12:00:00Z", "2026-03-29T01:00:00Z",
     "skipped 02:30 fires when the gap ends"},
    {"Europe/Berlin", "30 2 * * *", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z",
     "and once only"},
    {"Europe/Berlin", "*/15 2 * * *", "2026-03-28T12:00:00Z", "2026-03-29T01:00:00Z",
     "four skipped times, one run"},
    {"Europe/Berlin", "*/15 2 * * *", "2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z",
     "then the next day"},
    {"Europe/Berlin", "30 * * * *", "2026-03-29T00:30:00Z", "2026-03-29T01:30:00Z",
     "every hour: skipped wall time does not fire"},
    {"Europe/Berlin", "0 3 * * *", "2026-03-28T12:00:00Z", "2026-03-29T01:00:00Z",
     "03:00 CEST exists"},
    // Fall back, Berlin 2026-10-25: 03:00 CEST -> 02:00 CET at 01:00Z; 02:xx repeats.
    {"Europe/Berlin", "30 2 * * *", "2026-10-24T12:00:00Z", "2026-10-25T00:30:00Z",
     "repeated 02:30 fires at its first occurrence"},
    {"Europe/Berlin", "30 2 * * *", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z",
     "and not at the second"},
    {"Europe/Berlin", "30 * * * *", "2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z",
     "every hour: repeated wall time fires twice"},
    {"Europe/Berlin", "30 * * * *", "2026-10-25T01:30:00Z", "2026-10-25T02:30:00Z",
     "then 03:30 CET"},
    {"Europe/Berlin", "0 0 * * *", "2026-10-24T12:00:00Z", "2026-10-24T22:00:00Z",
     "midnight before the change (CEST)"},
    {"Europe/Berlin", "0 0 * * *", "2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z",
     "midnight after the change (CET)"},
    // Beyond the explicit transitions of the file: the footer rule M3.5.0,M10.5.0/3.
    {"Europe/Berlin", "30 2 * * *", "2040-03-24T12:00:00Z", "2040-03-25T01:00:00Z",
     "2040 spring gap (POSIX rule)"},
    {"Europe/Berlin", "30 2 * * *", "2040-10-27T12:00:00Z", "2040-10-28T00:30:00Z",
     "2040 fall back, first occurrence"},
    // New York 2026: 02:00 EST -> 03:00 EDT on March 8 (07:00Z); 02:00 EDT -> 01:00 EST on
    // November 1 (06:00Z); 01:xx repeats.
    {"America/New_York", "0 2 * * *", "2026-03-07T12:00:00Z", "2026-03-08T07:00:00Z",
     "skipped 02:00 fires at 03:00 EDT"},
    {"America/New_York", "0 2 * * *", "2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z",
     "next day 02:00 EDT"},
    {"America/New_York", "30 1 * * *", "2026-10-31T12:00:00Z", "2026-11-01T05:30:00Z",
     "01:30 EDT, first occurrence"},
    {"America/New_York", "30 1 * * *", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z",
     "not 01:30 EST"},
    {"America/New_York", "*/30 * * * *", "2026-11-01T05:30:00Z", "2026-11-01T06:00:00Z",
     "every hour: 01:00 EST fires"},
    {"America/New_York", "0 9 * * MON-FRI", "2026-01-09T15:00:00Z", "2026-01-12T14:00:00Z",
     "weekdays 09:00 EST"},
    {"America/New_York", "0 9 * * MON-FRI", "2026-07-10T14:00:00Z", "2026-07-13T13:00:00Z",
     "weekdays 09:00 EDT"},
    {"Asia/Kolkata", "0 9 * * *", "2026-01-10T00:00:00Z", "2026-01-10T03:30:00Z",
     "half-hour offset"},
    {"Australia/Sydney", "30 2 * * *", "2026-10-03T12:00:00Z", "2026-10-03T16:00:00Z",
     "southern spring gap (Oct 4)"},
};

TEST(CronTest, NextFireTable) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(std::string(c.zone) + " \"" + c.expr + "\" after " + c.after + ": " + c.why);
    auto zone = TimeZone::Load(c.zone);
    ASSERT_OK(zone.status());
    auto expr = CronExpr::Parse(c.expr);
    ASSERT_OK(expr.status());
    auto next = expr->NextFire(zone.value(), Utc(c.after));
    ASSERT_OK(next.status());
    EXPECT_EQ(Iso(next.value()), c.next);
  }
}

TEST(CronTest, MacrosExpandToFields) {
  EXPECT_EQ(CronExpr::Parse("@nightly")->fields(), "0 3 * * *");
  EXPECT_EQ(CronExpr::Parse("  @Weekly ")->fields(), "0 0 * * 0");
  EXPECT_EQ(CronExpr::Parse("@hourly")->fields(), "0 * * * *");
}

struct BadCase {
  const char* expr;
  const char* message;
};

const BadCase kBad[] = {
    {"0 25 * * *", "field 2 (hour), column 3: 25 is out of range 0-23"},
    {"30 25 * * *", "field 2 (hour), column 4: 25 is out of range 0-23"},
    {"0 0 1-32 * *", "field 3 (day-of-month), column 7: 32 is out of range 1-31"},
    {"* * * *", "expected 5 fields (minute hour day-of-month month day-of-week), got 4"},
    {"* * * * * *", "expected 5 fields (minute hour day-of-month month day-of-week), got 6"},
    {"", "expected 5 fields (minute hour day-of-month month day-of-week), got 0"},
    {"*/0 * * * *", "field 1 (minute), column 3: step \"0\" must be a number from 1 to 60"},
    {"0 0 * FOO *", "field 4 (month), column 7: unknown value \"FOO\""},
    {"0 0 * * 1,MOON", "field 5 (day-of-week), column 11: unknown value \"MOON\""},
    {"0 MON * * *",
     "field 2 (hour), column 3: unknown value \"MON\" (names are allowed only for month and "
     "day-of-week)"},
    {"5-2 * * * *", "field 1 (minute), column 1: range 5-2 is reversed (ranges do not wrap)"},
    {"1,,2 * * * *", "field 1 (minute), column 3: empty list element"},
    {"0 0 31 4,6 *", "field 3 (day-of-month), column 5: no selected month has these days"},
    {"@reboot", "column 1: unknown macro \"@reboot\""},
    {"@daily 5", "column 1: a macro stands alone"},
    {"0 0 * * 8", "field 5 (day-of-week), column 9: 8 is out of range 0-7"},
};

TEST(CronTest, BadExpressionsNameThePosition) {
  for (const BadCase& c : kBad) {
    SCOPED_TRACE(std::string("\"") + c.expr + "\"");
    auto e = CronExpr::Parse(c.expr);
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(e.status().message().rfind(c.message, 0), 0u) << e.status().message();
  }
}

TEST(CronTest, EveryMinuteAcrossAGapIsContinuousInRealTime) {
  // "* * * * *" follows real time: across the Berlin spring gap, consecutive fire times
  // are exactly 60 s apart, and across the fall-back they are too (both occurrences).
  auto zone = TimeZone::Load("Europe/Berlin");
  ASSERT_OK(zone.status());
  auto expr = CronExpr::Parse("* * * * *");
  ASSERT_OK(expr.status());
  for (const char* start : {"2026-03-29T00:50:00Z", "2026-10-25T00:50:00Z"}) {
    int64_t t = Utc(start);
    for (int i = 0; i < 30; ++i) {
      auto next = expr->NextFire(zone.value(), t);
      ASSERT_OK(next.status());
      ASSERT_EQ(next.value(), t + 60) << Iso(t);
      t = next.value();
    }
  }
}

}  // namespace
}  // namespace farm::cron
