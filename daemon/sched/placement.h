// Placement: whether a worker can build a matrix cell, and if not, which requirement it
// misses. First fit: farmd leases the oldest job of the highest priority that the asking
// worker can run. Pure functions over API messages; thread-safe.
#ifndef FARM_DAEMON_SCHED_PLACEMENT_H_
#define FARM_DAEMON_SCHED_PLACEMENT_H_

#include <string>

#include "farm/v1/types.pb.h"

namespace farm::sched {

// Returns "" when a worker with `caps` meets every build requirement of `cell`, else one
// sentence naming the first requirement it misses ("no Python 3.12 (has 3.11)").
std::string MissingRequirement(const farm::v1::MatrixCell& cell,
                               const farm::v1::Capabilities& caps);

}  // namespace farm::sched

#endif  // FARM_DAEMON_SCHED_PLACEMENT_H_
