// Fuzzes the cron parser and the next-fire computation. Input: 8 bytes of a start instant,
// one byte choosing the zone (UTC, Europe/Berlin, America/New_York, Australia/Lord_Howe
// with its half-hour shift), then the expression. Properties: an accepted expression
// always has a next fire time strictly after the start (the parser refuses expressions
// that can never fire), and parsing its five-field form gives the same form.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "daemon/cron/cron.h"
#include "daemon/cron/time_zone.h"
#include "tests/fuzz/fuzz_util.h"

namespace farm::fuzz {
namespace {

using cron::TimeZone;

const std::vector<TimeZone>& Zones() {
  static const std::vector<TimeZone> zones = [] {
    std::vector<TimeZone> z{TimeZone::Utc()};
    for (const char* name : {"Europe/Berlin", "America/New_York", "Australia/Lord_Howe"}) {
      auto tz = TimeZone::Load(name);
      if (tz.ok()) z.push_back(*tz);  // without tzdata, UTC only
    }
    return z;
  }();
  return zones;
}

int FuzzOne(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  // 1970 .. about 2100: the range schedules live in.
  int64_t after = static_cast<int64_t>(in.U64() % 4'102'444'800ULL);
  const TimeZone& zone = Zones()[in.Byte() % Zones().size()];
  std::string text(in.Rest());
  auto expr = cron::CronExpr::Parse(text);
  if (!expr.ok()) return 0;
  auto next = expr->NextFire(zone, after);
  fuzz::Require(next.ok(), "an accepted expression fires",
                text + " in " + zone.name() + " after " + std::to_string(after));
  fuzz::Require(*next > after, "the next fire is after the start", text);
  auto again = cron::CronExpr::Parse(expr->fields());
  fuzz::Require(again.ok() && again->fields() == expr->fields(),
                "the five-field form parses to itself", text + " -> " + expr->fields());
  return 0;
}

}  // namespace
}  // namespace farm::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return farm::fuzz::FuzzOne(data, size);
}
