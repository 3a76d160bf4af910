#include "common/wheel/problem.h"

namespace farm::wheel {

std::string Problem::ToString() const {
  std::string out = rule + ": ";
  if (!entry.empty()) out += entry + ": ";
  return out + detail;
}

bool HasProblem(const std::vector<Problem>& problems, const std::string& rule,
                const std::string& entry) {
  for (const Problem& p : problems) {
    if (p.rule == rule && (entry.empty() || p.entry == entry)) return true;
  }
  return false;
}

}  // namespace farm::wheel
