#include "daemon/sched/fanout.h"

#include "common/recipe/cell_environment.h"
#include "daemon/model/convert.h"
#include "daemon/sched/revalidation.h"

namespace farm::sched {

using model::ParseBlob;

Result<std::vector<store::JobRow>> FanoutValidations(store::Store& store, const store::JobRow& job,
                                                     int attempt, int64_t now_ms,
                                                     int max_attempts) {
  auto needs = ParseBlob<farm::v1::JobNeeds>(job.needs);
  std::vector<store::JobRow> out;
  if (needs.validate_in_size() == 0) return out;
  FARM_ASSIGN_OR_RETURN(store::JobRow base,
                        ValidationJobFor(store, job, attempt, now_ms, max_attempts));
  for (const farm::v1::MatrixCell& cell : needs.validate_in()) {
    std::string blob = cell.SerializeAsString();
    if (blob == job.cell) continue;  // the build validated its own cell
    store::JobRow row = base;
    row.cell = std::move(blob);
    // The cell's environment is the lock resolved for it when the build was submitted.
    auto lock = needs.validate_locks().find(recipe::ValidateCellKey(cell));
    if (lock != needs.validate_locks().end()) {
      auto row_needs = ParseBlob<farm::v1::JobNeeds>(row.needs);
      row_needs.set_lock_digest(lock->second);
      row.needs = row_needs.SerializeAsString();
    }
    out.push_back(std::move(row));
  }
  return out;
}

bool IsFanoutValidation(const store::JobRow& validation, const store::JobRow& target) {
  return validation.kind == store::kJobValidate && validation.target_job_id == target.id &&
         validation.cell != target.cell;
}

void FanoutOutcome(const farm::v1::ValidationReport& report, int* cause, std::string* detail) {
  if (*cause != store::kCauseCompleted || report.state() == farm::v1::VALIDATION_PASSED) return;
  *cause = store::kCauseValidationFailed;
  *detail = "validation did not prove this torch (" +
            farm::v1::ValidationState_Name(report.state()) + ")" +
            (report.message().empty() ? "" : ": " + report.message());
}

}  // namespace farm::sched
