// An audit::Recorder that keeps what the use cases record, in order, for their unit tests.
#ifndef FARM_TESTS_UNIT_DAEMON_BUILDS_RECORDING_AUDIT_H_
#define FARM_TESTS_UNIT_DAEMON_BUILDS_RECORDING_AUDIT_H_

#include <string>
#include <vector>

#include "daemon/audit/audit_log.h"

namespace farm::builds::testing {

class RecordingAudit final : public audit::Recorder {
 public:
  struct Row {
    std::string principal;
    audit::Action action;
    std::string target;
    std::string done;
    StatusCode outcome;
  };
  void Record(const auth::Principal& who, const audit::Entry& entry,
              const Status& outcome) override {
    records.push_back({who.name, entry.action, entry.target, entry.done, outcome.code()});
  }
  std::vector<Row> records;
};

}  // namespace farm::builds::testing

#endif  // FARM_TESTS_UNIT_DAEMON_BUILDS_RECORDING_AUDIT_H_
