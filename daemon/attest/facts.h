// The facts a wheel's statements attest, read from farmd's store: the build (recipe,
// source, patches, cell, consumed wheels, environment, worker, times, log) of an artifact,
// and a validation report with the worker that ran it. Internal to farm_attest.
#ifndef FARM_DAEMON_ATTEST_FACTS_H_
#define FARM_DAEMON_ATTEST_FACTS_H_

#include <string>

#include "common/provenance/statement.h"
#include "daemon/store/store.h"
#include "farm/v1/types.pb.h"

namespace farm::attest {

// The worker `worker_id` as its probe described it; only the id when it is not registered.
provenance::WorkerFacts WorkerFactsOf(store::Store& store, const std::string& worker_id);

// The build facts of `artifact`, finished at `now_ms`: the log digest covers the lines
// stored for its attempt so far (the build has ended when its wheel is uploaded).
Result<provenance::BuildFacts> BuildFactsOf(store::Store& store, const store::ArtifactRow& artifact,
                                            const std::string& farm_id, int64_t now_ms);

// A validation statement's facts for the wheel `wheel` from `report`, run by `job`'s
// attempt on `worker_id`. `verdict` is "passed" or "failed".
provenance::ValidationFacts ValidationFactsOf(store::Store& store, const provenance::Subject& wheel,
                                              const farm::v1::ValidationReport& report,
                                              const store::JobRow& job, int attempt,
                                              const std::string& worker_id,
                                              const std::string& farm_id, int64_t now_ms);

}  // namespace farm::attest

#endif  // FARM_DAEMON_ATTEST_FACTS_H_
