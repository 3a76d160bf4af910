#include "daemon/model/failure.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "daemon/model/convert.h"
#include "daemon/model/job_log.h"

namespace farm::model {
namespace {

// Lines of a failed attempt's log read to find why it failed.
constexpr int64_t kFailureTailLines = 400;
// Lines a failure shows at most.
constexpr size_t kMaxFailureLines = 12;

std::string Number(const char* format, double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

}  // namespace

const store::AttemptRow* CountedAttempt(const store::JobRow& job,
                                        const std::vector<store::AttemptRow>& attempts) {
  for (const auto& a : attempts) {
    if (a.number == job.attempt) return &a;
  }
  return nullptr;
}

Result<JobFailure> ExplainFailure(store::Store& store, const store::JobRow& job,
                                  const std::vector<store::AttemptRow>& attempts,
                                  const farm::v1::Recipe& recipe, bool with_lines) {
  const store::AttemptRow* a = CountedAttempt(job, attempts);
  JobFailure out{.phase = a ? FailurePhase(a->cause, a->detail) : "",
                 .summary = a && !a->detail.empty() ? a->detail : job.error};
  if (!with_lines) a = nullptr;  // the phase and summary are already taken
  if (a != nullptr && a->cause == store::kCauseValidationFailed) {
    FARM_ASSIGN_OR_RETURN(auto artifacts, store.ListArtifacts(job.id));
    for (const auto& art : artifacts) {
      if (art.attempt != a->number) continue;
      auto report = ParseBlob<farm::v1::ValidationReport>(art.validation);
      out.lines = FailedCaseLines(report, recipe.validation());
      if (!out.lines.empty()) break;  // one report covers all of the attempt's wheels
    }
  }
  if (a != nullptr) {
    FARM_ASSIGN_OR_RETURN(int64_t last, store.LastLogSeq(job.id, a->number));
    FARM_ASSIGN_OR_RETURN(
        auto tail,
        store.GetLogLines(job.id, a->number, std::max<int64_t>(0, last - kFailureTailLines),
                          static_cast<int>(kFailureTailLines)));
    for (auto& line : MeaningfulLines(tail)) {
      if (out.lines.size() < kMaxFailureLines) out.lines.push_back(std::move(line));
    }
  }
  return out;
}

std::vector<std::string> FailedCaseLines(const farm::v1::ValidationReport& report,
                                         const farm::v1::ValidationSpec& spec) {
  double min_cosine = spec.min_cosine() > 0 ? spec.min_cosine() : 0.99;
  double max_l1 = spec.max_relative_l1() > 0 ? spec.max_relative_l1() : 0.07;
  std::vector<std::string> out;
  for (const auto& c : report.cases()) {
    if (c.passed()) continue;
    std::string line = "case " + c.name() + " failed: cosine " + Number("%.4f", c.cosine()) +
                       " (min " + Number("%g", min_cosine) + "), relative L1 " +
                       Number("%.4f", c.relative_l1()) + " (max " + Number("%g", max_l1) + ")";
    if (c.tops() > 0) line += ", " + Number("%.1f", c.tops()) + " TOPS";
    out.push_back(line);
  }
  return out;
}

}  // namespace farm::model
