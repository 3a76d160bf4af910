#include "daemon/cron/time_zone.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "common/fs.h"

namespace farm::cron {

int64_t DaysFromCivil(int year, int month, int day) {
  // Howard Hinnant's days_from_civil: exact for the whole proleptic Gregorian calendar.
  int64_t y = year - (month <= 2 ? 1 : 0);
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t mp = (month + 9) % 12;
  int64_t doy = (153 * mp + 2) / 5 + day - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

CivilTime CivilFromSeconds(int64_t s) {
  int64_t days = s >= 0 ? s / 86400 : (s - 86399) / 86400;
  int64_t rem = s - days * 86400;
  int64_t z = days + 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  CivilTime c;
  c.day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  c.month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  c.year = static_cast<int>(yoe + era * 400 + (c.month <= 2 ? 1 : 0));
  c.hour = static_cast<int>(rem / 3600);
  c.minute = static_cast<int>(rem % 3600 / 60);
  c.second = static_cast<int>(rem % 60);
  return c;
}

int64_t SecondsFromCivil(const CivilTime& c) {
  return DaysFromCivil(c.year, c.month, c.day) * 86400 + c.hour * 3600 + c.minute * 60 + c.second;
}

int DaysInMonth(int year, int month) {
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 2 && leap ? 29 : kDays[(month - 1) % 12];
}

int WeekdayFromDays(int64_t days) {
  int64_t w = (days + 4) % 7;  // 1970-01-01 was a Thursday
  return static_cast<int>(w < 0 ? w + 7 : w);
}

namespace {

// --- POSIX TZ strings ------------------------------------------------------------------

class TzScanner {
 public:
  explicit TzScanner(std::string_view s) : s_(s) {}
  bool Done() const { return i_ >= s_.size(); }
  char Peek() const { return Done() ? '\0' : s_[i_]; }
  bool Eat(char c) {
    if (Peek() != c) return false;
    ++i_;
    return true;
  }
  bool Abbr(std::string* out) {
    if (Eat('<')) {
      size_t end = s_.find('>', i_);
      if (end == std::string_view::npos) return false;
      *out = std::string(s_.substr(i_, end - i_));
      i_ = end + 1;
      return !out->empty();
    }
    size_t start = i_;
    while (!Done() && std::isalpha(static_cast<unsigned char>(Peek()))) ++i_;
    *out = std::string(s_.substr(start, i_ - start));
    return out->size() >= 3;
  }
  bool Number(int* out, int max) {
    if (!std::isdigit(static_cast<unsigned char>(Peek()))) return false;
    int v = 0;
    while (std::isdigit(static_cast<unsigned char>(Peek()))) {
      v = v * 10 + (s_[i_++] - '0');
      if (v > max) return false;
    }
    *out = v;
    return true;
  }
  // [+-]hh[:mm[:ss]] in seconds.
  bool Time(int32_t* out, int max_hours) {
    int sign = Eat('-') ? -1 : (Eat('+'), 1);
    int h = 0, m = 0, sec = 0;
    if (!Number(&h, max_hours)) return false;
    if (Eat(':') && !Number(&m, 59)) return false;
    if (Peek() == ':' && (Eat(':'), !Number(&sec, 59))) return false;
    *out = sign * (h * 3600 + m * 60 + sec);
    return true;
  }
  bool Date(TimeZone::DateRule* r) {
    if (Eat('M')) {
      r->kind = 'M';
      if (!Number(&r->a, 12) || !Eat('.') || !Number(&r->b, 5) || !Eat('.') || !Number(&r->c, 6)) {
        return false;
      }
      if (r->a < 1 || r->b < 1) return false;
    } else if (Eat('J')) {
      r->kind = 'J';
      if (!Number(&r->a, 365) || r->a < 1) return false;
    } else {
      r->kind = 'N';
      if (!Number(&r->a, 365)) return false;
    }
    r->time = 7200;
    return !Eat('/') || Time(&r->time, 167);
  }

 private:
  std::string_view s_;
  size_t i_ = 0;
};

// Local seconds of the rule's day (midnight) in `year`.
int64_t RuleDay(const TimeZone::DateRule& r, int year) {
  int64_t jan1 = DaysFromCivil(year, 1, 1);
  if (r.kind == 'J') {
    bool leap = DaysInMonth(year, 2) == 29;
    return jan1 + r.a - 1 + (leap && r.a >= 60 ? 1 : 0);
  }
  if (r.kind == 'N') return jan1 + r.a;
  int64_t first = DaysFromCivil(year, r.a, 1);
  int day = 1 + (r.c - WeekdayFromDays(first) + 7) % 7 + (r.b - 1) * 7;
  while (day > DaysInMonth(year, r.a)) day -= 7;
  return first + day - 1;
}

uint32_t Be32(std::string_view d, size_t at) {
  return (static_cast<uint32_t>(static_cast<uint8_t>(d[at])) << 24) |
         (static_cast<uint32_t>(static_cast<uint8_t>(d[at + 1])) << 16) |
         (static_cast<uint32_t>(static_cast<uint8_t>(d[at + 2])) << 8) |
         static_cast<uint32_t>(static_cast<uint8_t>(d[at + 3]));
}

int64_t Be64(std::string_view d, size_t at) {
  return static_cast<int64_t>((static_cast<uint64_t>(Be32(d, at)) << 32) | Be32(d, at + 4));
}

bool ValidZoneName(const std::string& name) {
  if (name.empty() || name.size() > 200 || name[0] == '/' || name[0] == '-') return false;
  if (name.find("..") != std::string::npos) return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '/' || c == '_' || c == '-' || c == '+';
  });
}

}  // namespace

Result<TimeZone::PosixRule> ParsePosixTz(std::string_view text) {
  TzScanner s(text);
  TimeZone::PosixRule r;
  auto bad = [&text] {
    return Status::InvalidArgument("malformed TZ rule \"" + std::string(text) + "\"");
  };
  int32_t west = 0;
  if (!s.Abbr(&r.std_abbr) || !s.Time(&west, 24)) return bad();
  r.std_offset = -west;
  if (s.Done()) return r;
  if (!s.Abbr(&r.dst_abbr)) return bad();
  r.has_dst = true;
  r.dst_offset = r.std_offset + 3600;
  if (s.Peek() != ',' && !s.Done()) {
    if (!s.Time(&west, 24)) return bad();
    r.dst_offset = -west;
  }
  if (s.Done()) {  // no rule: the US rules POSIX assumes
    r.start = {'M', 3, 2, 0, 7200};
    r.end = {'M', 11, 1, 0, 7200};
    return r;
  }
  if (!s.Eat(',') || !s.Date(&r.start) || !s.Eat(',') || !s.Date(&r.end) || !s.Done()) {
    return bad();
  }
  return r;
}

Result<TimeZone> TimeZone::FromTzif(const std::string& name, std::string_view d) {
  auto bad = [&name](const std::string& why) {
    return Status::InvalidArgument("time zone " + name + ": " + why);
  };
  if (d.size() < 44 || d.substr(0, 4) != "TZif") return bad("not a TZif file");
  char version = d[4];
  auto block_size = [&d](size_t at, size_t time_size, uint32_t c[6]) {
    for (int i = 0; i < 6; ++i) c[i] = Be32(d, at + 20 + 4 * i);
    // isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt
    return 44 + c[3] * time_size + c[3] + c[4] * 6 + c[5] + c[2] * (time_size + 4) + c[1] + c[0];
  };
  uint32_t c[6];
  size_t v1 = block_size(0, 4, c);
  if (v1 > d.size()) return bad("truncated");
  size_t at = 0;
  size_t time_size = 4;
  if (version >= '2') {
    if (v1 + 44 > d.size() || d.substr(v1, 4) != "TZif") return bad("missing the 64-bit block");
    at = v1;
    time_size = 8;
    if (at + block_size(at, 8, c) > d.size()) return bad("truncated");
  }
  if (c[4] == 0 || c[4] > 256) return bad("no local time types");
  TimeZone tz;
  tz.name_ = name;
  size_t p = at + 44;
  for (uint32_t i = 0; i < c[3]; ++i, p += time_size) {
    tz.transitions_.push_back(time_size == 8 ? Be64(d, p) : static_cast<int32_t>(Be32(d, p)));
  }
  for (uint32_t i = 0; i < c[3]; ++i, ++p) {
    uint8_t type = static_cast<uint8_t>(d[p]);
    if (type >= c[4]) return bad("transition type out of range");
    tz.transition_types_.push_back(type);
  }
  size_t chars = p + c[4] * 6;
  for (uint32_t i = 0; i < c[4]; ++i, p += 6) {
    size_t idx = static_cast<uint8_t>(d[p + 5]);
    if (idx >= c[5]) return bad("abbreviation index out of range");
    std::string_view abbr = d.substr(chars + idx, c[5] - idx);
    // RFC 8536 3.2: utoff more than -25 h and less than 26 h. FromLocal and the cron
    // search rely on offsets of about a day at most.
    auto utoff = static_cast<int32_t>(Be32(d, p));
    if (utoff < -89999 || utoff > 93599) return bad("UT offset out of range");
    tz.types_.push_back({utoff, d[p + 4] != 0, std::string(abbr.substr(0, abbr.find('\0')))});
  }
  if (version >= '2') {
    size_t footer = at + block_size(at, 8, c);
    if (footer < d.size() && d[footer] == '\n') {
      size_t end = d.find('\n', footer + 1);
      std::string_view tzstr = d.substr(
          footer + 1, end == std::string_view::npos ? std::string_view::npos : end - footer - 1);
      if (!tzstr.empty()) {
        FARM_ASSIGN_OR_RETURN(tz.rule_, ParsePosixTz(tzstr));
      }
    }
  }
  return tz;
}

Result<TimeZone> TimeZone::Load(const std::string& name, const std::string& zoneinfo_dir) {
  if (name == "UTC" || name == "Etc/UTC") {
    TimeZone tz = Utc();
    tz.name_ = name;
    return tz;
  }
  if (!ValidZoneName(name)) {
    return Status::InvalidArgument("\"" + name + "\" is not an IANA time zone name");
  }
  std::string dir = zoneinfo_dir;
  if (dir.empty()) {
    const char* env = std::getenv("TZDIR");
    dir = env && *env ? env : "/usr/share/zoneinfo";
  }
  auto data = fs::ReadFile(dir + "/" + name);
  if (!data.ok()) return Status::InvalidArgument("unknown time zone \"" + name + "\"");
  return FromTzif(name, data.value());
}

TimeZone TimeZone::Utc() {
  TimeZone tz;
  tz.name_ = "UTC";
  tz.types_.push_back({0, false, "UTC"});
  return tz;
}

TimeZone::Type TimeZone::RuleTypeAt(int64_t t) const {
  const PosixRule& r = *rule_;
  if (!r.has_dst) return {r.std_offset, false, r.std_abbr};
  int year = CivilFromSeconds(t + r.std_offset).year;
  int64_t start = RuleDay(r.start, year) * 86400 + r.start.time - r.std_offset;
  int64_t end = RuleDay(r.end, year) * 86400 + r.end.time - r.dst_offset;
  bool dst = start < end ? (t >= start && t < end) : !(t >= end && t < start);
  return dst ? Type{r.dst_offset, true, r.dst_abbr} : Type{r.std_offset, false, r.std_abbr};
}

TimeZone::Type TimeZone::TypeAt(int64_t t) const {
  if (transitions_.empty() || t >= transitions_.back()) {
    if (rule_) return RuleTypeAt(t);
    if (!transitions_.empty()) return types_[transition_types_.back()];
  }
  if (transitions_.empty() || t < transitions_.front()) {
    // Before the first transition: the first standard-time type (RFC 8536 3.2).
    for (const Type& type : types_) {
      if (!type.dst) return type;
    }
    return types_.front();
  }
  auto it = std::upper_bound(transitions_.begin(), transitions_.end(), t);
  return types_[transition_types_[static_cast<size_t>(it - transitions_.begin()) - 1]];
}

int32_t TimeZone::OffsetAt(int64_t unix_s) const { return TypeAt(unix_s).offset; }

std::string TimeZone::AbbreviationAt(int64_t unix_s) const { return TypeAt(unix_s).abbr; }

LocalMapping TimeZone::FromLocal(int64_t c) const {
  // Offsets a day either side bracket every instant whose wall time is c (offsets stay
  // within -12 h..+14 h); a candidate is real when its own offset agrees.
  int32_t before = OffsetAt(c - 86400);
  int32_t after = OffsetAt(c + 86400);
  int64_t t1 = c - before, t2 = c - after;
  bool ok1 = OffsetAt(t1) == before, ok2 = OffsetAt(t2) == after;
  LocalMapping m;
  if (ok1 && ok2 && t1 != t2) {
    m.kind = LocalMapping::kRepeated;
    m.first = std::min(t1, t2);
    m.second = std::max(t1, t2);
  } else if (ok1 || ok2) {
    m.first = ok1 ? t1 : t2;
  } else {
    // A gap: the clock jumped from `before` to `after`; find the jump by bisection.
    m.kind = LocalMapping::kSkipped;
    int64_t lo = std::min(t1, t2), hi = std::max(t1, t2);
    for (int i = 0; i < 64 && hi - lo > 1; ++i) {
      int64_t mid = lo + (hi - lo) / 2;
      (OffsetAt(mid) == OffsetAt(lo) ? lo : hi) = mid;
    }
    m.first = hi;
  }
  return m;
}

std::string TimeZone::FormatLocal(int64_t unix_s) const {
  CivilTime c = CivilFromSeconds(ToLocal(unix_s));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d ", c.year, c.month, c.day, c.hour,
                c.minute, c.second);
  return buf + AbbreviationAt(unix_s);
}

}  // namespace farm::cron
