#include "daemon/cron/cron.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <vector>

#include "common/strings.h"

namespace farm::cron {
namespace {

struct FieldSpec {
  const char* name;
  int min;
  int max;
  const char* const* names;  // names for min..min+count-1, or null
  int name_count;
};

const char* const kMonthNames[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                   "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
const char* const kDayNames[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

const FieldSpec kFields[5] = {
    {"minute", 0, 59, nullptr, 0},       {"hour", 0, 23, nullptr, 0},
    {"day-of-month", 1, 31, nullptr, 0}, {"month", 1, 12, kMonthNames, 12},
    {"day-of-week", 0, 7, kDayNames, 7},
};

struct Macro {
  const char* name;
  const char* fields;
};
const Macro kMacros[] = {
    {"@yearly", "0 0 1 1 *"},  {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"},  {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
    {"@nightly", "0 3 * * *"}, {"@hourly", "0 * * * *"},
};

// Parses one field into `bits`, reporting errors at 1-based columns of the whole text.
class FieldParser {
 public:
  FieldParser(int index, std::string_view text, size_t column)
      : index_(index), spec_(kFields[index]), text_(text), column_(column) {}

  Status Parse(std::vector<bool>* bits) {
    bits->assign(spec_.max + 1, false);
    size_t pos = 0;
    for (int guard = 0; guard < 1000; ++guard) {
      size_t comma = text_.find(',', pos);
      std::string_view item =
          text_.substr(pos, comma == std::string_view::npos ? comma : comma - pos);
      if (item.empty()) return Error(pos, "empty list element");
      FARM_RETURN_IF_ERROR(ParseItem(item, pos, bits));
      if (comma == std::string_view::npos) return Status::Ok();
      pos = comma + 1;
    }
    return Error(0, "too many list elements");
  }

 private:
  Status Error(size_t offset, const std::string& what) const {
    return Status::InvalidArgument("field " + std::to_string(index_ + 1) + " (" + spec_.name +
                                   "), column " + std::to_string(column_ + offset) + ": " + what);
  }

  Result<int> Value(std::string_view s, size_t at) const {
    if (s.empty()) return Error(at, "missing value");
    if (std::isdigit(static_cast<unsigned char>(s[0]))) {
      if (s.size() > 4 ||
          !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); })) {
        return Error(at, "\"" + std::string(s) + "\" is not a number");
      }
      int v = std::stoi(std::string(s));
      if (v < spec_.min || v > spec_.max) {
        return Error(at, std::to_string(v) + " is out of range " + std::to_string(spec_.min) + "-" +
                             std::to_string(spec_.max));
      }
      return v;
    }
    std::string upper(s);
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    for (int i = 0; i < spec_.name_count; ++i) {
      if (upper == spec_.names[i]) return spec_.min == 1 ? i + 1 : i;
    }
    return Error(at,
                 "unknown value \"" + std::string(s) + "\"" +
                     (spec_.names ? "" : " (names are allowed only for month and day-of-week)"));
  }

  Status ParseItem(std::string_view item, size_t at, std::vector<bool>* bits) {
    size_t slash = item.find('/');
    std::string_view range = item.substr(0, slash);
    int lo = spec_.min, hi = spec_.max, step = 1;
    bool star = range == "*";
    if (!star) {
      size_t dash = range.find('-');
      FARM_ASSIGN_OR_RETURN(lo, Value(range.substr(0, dash), at));
      if (dash != std::string_view::npos) {
        FARM_ASSIGN_OR_RETURN(hi, Value(range.substr(dash + 1), at + dash + 1));
        if (hi < lo) {
          return Error(at, "range " + std::string(range) + " is reversed (ranges do not wrap)");
        }
      } else if (slash == std::string_view::npos) {
        hi = lo;
      }
      if (spec_.min == 0 && spec_.max == 7 && hi == 7 && lo == 7) lo = hi = 0;
    }
    if (slash != std::string_view::npos) {
      std::string_view s = item.substr(slash + 1);
      bool digits =
          !s.empty() && s.size() <= 3 &&
          std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
      int span = spec_.max - spec_.min + 1;
      if (!digits || (step = std::stoi(std::string(s))) < 1 || step > span) {
        return Error(at + slash + 1, "step \"" + std::string(s) + "\" must be a number from 1 to " +
                                         std::to_string(span));
      }
    }
    for (int v = lo; v <= hi; v += step) (*bits)[v] = true;
    return Status::Ok();
  }

  int index_;
  const FieldSpec& spec_;
  std::string_view text_;
  size_t column_;
};

// Splits on blanks, recording the 1-based column where each field starts.
std::vector<std::pair<std::string_view, size_t>> SplitFields(std::string_view text) {
  std::vector<std::pair<std::string_view, size_t>> out;
  size_t i = 0;
  while (i < text.size() && out.size() < 16) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i > start) out.emplace_back(text.substr(start, i - start), start + 1);
  }
  return out;
}

}  // namespace

Result<CronExpr> CronExpr::Parse(std::string_view text) {
  CronExpr e;
  e.text_ = std::string(text);
  std::string_view fields = text;
  size_t first = text.find_first_not_of(" \t");
  if (first != std::string_view::npos && text[first] == '@') {
    auto parts = SplitFields(text);
    if (parts.size() != 1) return Status::InvalidArgument("column 1: a macro stands alone");
    std::string lower = AsciiLower(parts[0].first);
    const Macro* found = nullptr;
    for (const Macro& m : kMacros) found = lower == m.name ? &m : found;
    if (!found) {
      return Status::InvalidArgument("column " + std::to_string(parts[0].second) +
                                     ": unknown macro \"" + std::string(parts[0].first) +
                                     "\" (expected @hourly, @daily, @nightly, @weekly, @monthly, "
                                     "@yearly)");
    }
    fields = found->fields;
  }
  auto parts = SplitFields(fields);
  if (parts.size() != 5) {
    return Status::InvalidArgument(
        "expected 5 fields (minute hour day-of-month month day-of-week), got " +
        std::to_string(parts.size()));
  }
  std::vector<bool> bits[5];
  for (int i = 0; i < 5; ++i) {
    FARM_RETURN_IF_ERROR(FieldParser(i, parts[i].first, parts[i].second).Parse(&bits[i]));
  }
  for (int v = 0; v < 60; ++v) e.minutes_[v] = bits[0][v];
  for (int v = 0; v < 24; ++v) e.hours_[v] = bits[1][v];
  for (int v = 1; v <= 31; ++v) e.days_[v] = bits[2][v];
  for (int v = 1; v <= 12; ++v) e.months_[v] = bits[3][v];
  for (int v = 0; v < 7; ++v) e.weekdays_[v] = bits[4][v] || (v == 0 && bits[4][7]);
  e.day_star_ = parts[2].first[0] == '*';
  e.weekday_star_ = parts[4].first[0] == '*';
  for (size_t i = 0; i < 5; ++i) e.fields_ += (i ? " " : "") + std::string(parts[i].first);
  // A day-of-month alone that no selected month has (31 in April) would never fire.
  if (!e.day_star_ && e.weekday_star_) {
    bool possible = false;
    for (int m = 1; m <= 12; ++m) {
      for (int d = 1; d <= DaysInMonth(2000, m); ++d) possible |= e.months_[m] && e.days_[d];
    }
    if (!possible) {
      return Status::InvalidArgument("field 3 (day-of-month), column " +
                                     std::to_string(parts[2].second) +
                                     ": no selected month has these days, it would never fire");
    }
  }
  return e;
}

bool CronExpr::MatchesDay(int year, int month, int day) const {
  if (!months_[month]) return false;
  bool dom = days_[day];
  bool dow = weekdays_[WeekdayFromDays(DaysFromCivil(year, month, day))];
  if (!day_star_ && !weekday_star_) return dom || dow;
  return dom && dow;
}

void CronExpr::CollectInstants(const TimeZone& zone, int64_t local_s, int64_t after,
                               int64_t* best) const {
  LocalMapping m = zone.FromLocal(local_s);
  bool every_hour = hours_.all();
  std::optional<int64_t> candidates[2];
  if (m.kind == LocalMapping::kUnique) {
    candidates[0] = m.first;
  } else if (m.kind == LocalMapping::kSkipped) {
    if (!every_hour) candidates[0] = m.first;
  } else {
    candidates[0] = m.first;
    if (every_hour) candidates[1] = m.second;
  }
  for (const auto& c : candidates) {
    if (c && *c > after && (*best < 0 || *c < *best)) *best = *c;
  }
}

Result<int64_t> CronExpr::NextFire(const TimeZone& zone, int64_t after) const {
  // Candidates are enumerated in wall-clock order from two days before `after`'s wall
  // time (a DST change moves the mapping by at most a few hours); the earliest instant
  // after `after` wins. Once a day starts more than a day past the winner's wall time,
  // no later candidate can map to an earlier instant.
  int64_t local_after = zone.ToLocal(after);
  int64_t first_day = (local_after >= 0 ? local_after / 86400 : (local_after - 86399) / 86400) - 2;
  int64_t best = -1;
  for (int64_t day = first_day; day < first_day + 366 * 10; ++day) {
    if (best >= 0 && day * 86400 > zone.ToLocal(best) + 86400) break;
    CivilTime c = CivilFromSeconds(day * 86400);
    if (!MatchesDay(c.year, c.month, c.day)) continue;
    for (int h = 0; h < 24; ++h) {
      if (!hours_[h]) continue;
      for (int m = 0; m < 60; ++m) {
        if (minutes_[m]) CollectInstants(zone, day * 86400 + h * 3600 + m * 60, after, &best);
      }
    }
  }
  if (best < 0) return Status::NotFound("\"" + text_ + "\" does not fire within 10 years");
  return best;
}

}  // namespace farm::cron
