// Problem: one reason a wheel is rejected, as every check in common/wheel/ reports it. A
// problem names the rule that failed (a stable kebab-case identifier tests and dashboards
// can match on), the entry of the wheel it concerns (empty for the wheel as a whole) and a
// human-readable detail. Plain value type; safe to copy between threads.
#ifndef FARM_COMMON_WHEEL_PROBLEM_H_
#define FARM_COMMON_WHEEL_PROBLEM_H_

#include <string>
#include <vector>

namespace farm::wheel {

struct Problem {
  std::string rule;    // "record-hash-mismatch", "path-dotdot", "arch-missing", ...
  std::string entry;   // path inside the wheel, or "" for the whole wheel
  std::string detail;  // what was found, what was expected

  // "rule: entry: detail" (the entry part is left out when empty).
  std::string ToString() const;
};

// True when some problem in `problems` has rule `rule` (and entry `entry` when given).
bool HasProblem(const std::vector<Problem>& problems, const std::string& rule,
                const std::string& entry = "");

}  // namespace farm::wheel

#endif  // FARM_COMMON_WHEEL_PROBLEM_H_
