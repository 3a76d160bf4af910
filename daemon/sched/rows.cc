#include "daemon/sched/rows.h"

#include <string>
#include <unordered_map>
#include <utility>

#include "daemon/model/convert.h"

namespace farm::sched {

std::vector<FleetWorker> FleetOf(const std::vector<store::WorkerRow>& rows) {
  std::vector<FleetWorker> fleet;
  std::unordered_map<std::string, int> classes;  // PlacementClassKey -> class
  for (const store::WorkerRow& w : rows) {
    auto caps = model::ParseBlob<farm::v1::Capabilities>(w.capabilities);
    auto [cls, fresh] = classes.emplace(PlacementClassKey(caps), static_cast<int>(classes.size()));
    fleet.push_back({w.id, w.name, w.state, w.drain_requested, std::move(caps), cls->second});
  }
  return fleet;
}

Waiting ExplainPendingJob(const store::JobRow& row, const std::vector<FleetWorker>& fleet,
                          const std::vector<PeerWorker>& peers, int64_t now_ms,
                          size_t max_able_names) {
  PendingFacts facts{row.not_before_ms, row.error, now_ms};
  facts.max_able_names = max_able_names;
  facts.validation = row.kind == store::kJobValidate;
  facts.needs = model::ParseBlob<farm::v1::JobNeeds>(row.needs);
  facts.memory = {.compile_gb = row.compile_mib / 1024.0,
                  .validation_gb = row.validation_mib / 1024.0};
  return ExplainWaiting(model::ParseBlob<farm::v1::MatrixCell>(row.cell), facts, fleet, peers);
}

}  // namespace farm::sched
