// TimeZone against the C library's own reading of the same zone files (TZ + localtime_r),
// hour by hour over decades, and its POSIX rule parser and local-time mapping.
#include "daemon/cron/time_zone.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstdlib>
#include <ctime>

#include "tests/support/test_util.h"

namespace farm::cron {
namespace {

TEST(TimeZoneTest, OffsetsAgreeWithTheCLibrary) {
  // Setting TZ is process-global; this test is single-threaded and restores it.
  const char* old = std::getenv("TZ");
  std::string saved = old ? old : "";
  for (const char* name : {"Europe/Berlin", "America/New_York", "Australia/Sydney", "Asia/Kolkata",
                           "America/Santiago", "Europe/London"}) {
    SCOPED_TRACE(name);
    auto zone = TimeZone::Load(name);
    ASSERT_OK(zone.status());
    setenv("TZ", name, 1);
    tzset();
    int mismatches = 0;
    // 1971..2060 every 5 hours: both the transition table and the footer rule.
    for (int64_t t = 31536000; t < 2871763200 && mismatches < 5; t += 5 * 3600 + 17) {
      std::time_t tt = static_cast<std::time_t>(t);
      std::tm tm{};
      localtime_r(&tt, &tm);
      if (tm.tm_gmtoff != zone->OffsetAt(t)) {
        ++mismatches;
        ADD_FAILURE() << "at " << t << ": libc " << tm.tm_gmtoff << " ours " << zone->OffsetAt(t);
      }
      if (mismatches == 0 && tm.tm_zone && zone->AbbreviationAt(t) != tm.tm_zone) {
        ++mismatches;
        ADD_FAILURE() << "abbreviation at " << t << ": libc " << tm.tm_zone << " ours "
                      << zone->AbbreviationAt(t);
      }
    }
  }
  if (old)
    setenv("TZ", saved.c_str(), 1);
  else
    unsetenv("TZ");
  tzset();
}

TEST(TimeZoneTest, LocalTimesInGapsAndOverlaps) {
  auto berlin = TimeZone::Load("Europe/Berlin");
  ASSERT_OK(berlin.status());
  auto local = [](int y, int mo, int d, int h, int mi) {
    return SecondsFromCivil({y, mo, d, h, mi, 0});
  };
  // 2026-03-29 02:30 does not exist; the gap ends at 01:00Z (1774746000).
  LocalMapping gap = berlin->FromLocal(local(2026, 3, 29, 2, 30));
  EXPECT_EQ(gap.kind, LocalMapping::kSkipped);
  EXPECT_EQ(gap.first, 1774746000);
  // 2026-10-25 02:30 happens at 00:30Z (CEST) and 01:30Z (CET).
  LocalMapping twice = berlin->FromLocal(local(2026, 10, 25, 2, 30));
  EXPECT_EQ(twice.kind, LocalMapping::kRepeated);
  EXPECT_EQ(twice.first, 1792888200);
  EXPECT_EQ(twice.second, 1792888200 + 3600);
  LocalMapping once = berlin->FromLocal(local(2026, 7, 1, 12, 0));
  EXPECT_EQ(once.kind, LocalMapping::kUnique);
  EXPECT_EQ(berlin->FormatLocal(once.first), "2026-07-01 12:00:00 CEST");
}

TEST(TimeZoneTest, PosixRules) {
  auto cet = ParsePosixTz("CET-1CEST,M3.5.0,M10.5.0/3");
  ASSERT_OK(cet.status());
  EXPECT_EQ(cet->std_offset, 3600);
  EXPECT_EQ(cet->dst_offset, 7200);
  EXPECT_EQ(cet->end.time, 3 * 3600);
  auto odd = ParsePosixTz("<-02>2<-01>,M3.5.0/-1,M10.5.0/0");
  ASSERT_OK(odd.status());
  EXPECT_EQ(odd->std_abbr, "-02");
  EXPECT_EQ(odd->start.time, -3600);
  auto fixed = ParsePosixTz("<+0530>-5:30");
  ASSERT_OK(fixed.status());
  EXPECT_FALSE(fixed->has_dst);
  EXPECT_EQ(fixed->std_offset, 5 * 3600 + 1800);
  EXPECT_FALSE(ParsePosixTz("C-1").ok());
  EXPECT_FALSE(ParsePosixTz("CET-1CEST,M13.5.0,M10.5.0").ok());
  EXPECT_FALSE(ParsePosixTz("CET-1CEST,M3.5.0").ok());
}

TEST(TimeZoneTest, RejectsBadNamesAndFiles) {
  EXPECT_EQ(TimeZone::Load("Mars/Olympus_Mons").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(TimeZone::Load("../../etc/passwd").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(TimeZone::Load("/etc/passwd").status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(TimeZone::FromTzif("x", "TZif2 not really").ok());
  ASSERT_OK(TimeZone::Load("UTC").status());
  EXPECT_EQ(TimeZone::Load("UTC")->OffsetAt(1774746000), 0);
}

// A version 1 TZif file of one local time type with UT offset `utoff` and no transitions.
std::string OneTypeTzif(int32_t utoff) {
  auto be32 = [](uint32_t v) {
    return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                       static_cast<char>(v >> 8), static_cast<char>(v)};
  };
  std::string d = "TZif" + std::string(16, '\0');
  for (uint32_t count : {0u, 0u, 0u, 0u, 1u, 4u}) d += be32(count);  // 1 type, 4 chars
  d += be32(static_cast<uint32_t>(utoff)) + std::string{'\0', '\0'} + std::string("ABC\0", 4);
  return d;
}

TEST(TimeZoneTest, OffsetsPastRfc8536RangeAreRefused) {
  // Found by tests/fuzz/time_zone_fuzz: an offset of 190 days was accepted, and FromLocal
  // assumes offsets of about a day at most.
  auto ok = TimeZone::FromTzif("x", OneTypeTzif(5 * 3600 + 1800));
  ASSERT_OK(ok.status());
  EXPECT_EQ(ok->OffsetAt(0), 5 * 3600 + 1800);
  EXPECT_OK(TimeZone::FromTzif("x", OneTypeTzif(-89999)).status());
  EXPECT_OK(TimeZone::FromTzif("x", OneTypeTzif(93599)).status());
  for (int32_t bad : {16'403'800, -90000, 93600, INT32_MIN}) {
    auto zone = TimeZone::FromTzif("x", OneTypeTzif(bad));
    EXPECT_FALSE(zone.ok()) << bad;
    EXPECT_NE(zone.status().message().find("UT offset out of range"), std::string::npos)
        << zone.status().message();
  }
}

TEST(TimeZoneTest, CivilArithmetic) {
  EXPECT_EQ(DaysFromCivil(1970, 1, 1), 0);
  EXPECT_EQ(DaysFromCivil(2000, 3, 1), 11017);
  EXPECT_EQ(WeekdayFromDays(DaysFromCivil(2026, 3, 29)), 0);  // a Sunday
  CivilTime c = CivilFromSeconds(-1);
  EXPECT_EQ(c.year, 1969);
  EXPECT_EQ(c.hour, 23);
  EXPECT_EQ(DaysInMonth(2028, 2), 29);
  EXPECT_EQ(DaysInMonth(2100, 2), 28);
}

}  // namespace
}  // namespace farm::cron
