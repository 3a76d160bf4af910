// Coverage: what the farm holds of each package (recipe name) and version, cell by cell
// (torch x CUDA x Python x GPU arch list x platform), with one state per cell
// (docs/coverage.md). The cells are those of the jobs of recent builds, plus the cells of
// the newest build's matrix that no job built ("missing").
//
// Which job decides a cell: the newest build job of that cell (highest id) that was not
// cancelled, a final release's before any release candidate's (docs/schedules.md,
// "Release candidates"). Its state gives the cell's: pending or running is "in progress", failed is
// "failed" with the job's error, succeeded is read from its wheels' validation states
// (any failed: "failed"; any waiting for a GPU: "pending hardware"; all passed:
// "validated"; otherwise "built", the recipe asks for no validation script).
//
// ComputeCoverage is a pure function of BuildFacts; ReadRecentBuilds reads those with
// existing store queries (builds, their jobs, their jobs' wheels, their schedule runs and
// publications), so coverage adds no table and no method to the Store. Thread-safe: no state.
#ifndef FARM_DAEMON_COVERAGE_COVERAGE_H_
#define FARM_DAEMON_COVERAGE_COVERAGE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "daemon/store/store.h"
#include "farm/v1/client.pb.h"
#include "farm/v1/types.pb.h"

namespace farm::coverage {

enum class CellState {
  kValidated,        // built, and every wheel passed validation on a GPU
  kPendingHardware,  // built; validation waits for a worker with a GPU the wheel runs on
  kBuilt,            // built; the recipe asks for no validation script
  kFailed,           // the build or its validation failed (cause says which)
  kInProgress,       // a job of the cell is queued or running
  kMissing,          // in the newest matrix of the recipe, and no job built it
};

// The state's name in the API and in filters ("validated", "pending_hardware", ...).
std::string_view CellStateName(CellState state);
// The state in words, for people ("built and validated", ...).
std::string_view CellStateWords(CellState state);
// The state named `name` (CellStateName), nullopt for anything else.
std::optional<CellState> ParseCellState(std::string_view name);
// Every state, in the order above.
const std::vector<CellState>& AllCellStates();

// A cell of the coverage table. Ordered by package, version, then the cell's axes.
struct CellKey {
  std::string package;
  std::string version;
  std::string torch;
  std::string cuda;
  std::string python;
  std::string arch_list;
  std::string platform;
  auto operator<=>(const CellKey&) const = default;
};

struct Cell {
  CellKey key;
  CellState state = CellState::kMissing;
  std::string cause;         // why it failed, or what it waits for; "" when there is nothing
  int64_t job_id = 0;        // the job that decides the state; 0 for a missing cell
  int64_t build_id = 0;      // its build; for a missing cell, the build whose matrix lists it
  std::string wheel;         // the wheel's file name (the first, when a job made several)
  int64_t built_ms = 0;      // when the deciding job finished; 0 when it has not
  int64_t validated_ms = 0;  // when its wheels passed validation; 0 when they have not
  // Seconds from the upstream release the build answered to its validated wheel: filled
  // for builds fired by an upstream watch; nullopt otherwise.
  std::optional<int64_t> release_to_wheel_seconds;
  // Decided by a build against a torch release candidate (JobRow::release_candidate); a
  // job of the final release replaces it, whatever their order, and never the reverse.
  bool release_candidate = false;
};

// What coverage reads of one build.
struct BuildFacts {
  store::BuildRow build;
  farm::v1::Recipe recipe;
  std::vector<store::JobRow> jobs;                               // build and validation jobs
  std::map<int64_t, std::vector<store::ArtifactRow>> artifacts;  // by job id
  int64_t schedule_id = 0;  // the schedule whose run submitted it; read for failed builds only
  // When the upstream release a watch fired this build for was published (Unix ms); 0 for
  // a build no watch fired.
  int64_t upstream_ms = 0;
  // Publications refused because the wheel is larger than the destination takes.
  std::vector<store::PublicationRow> refused;
};

// Which cells a listing shows; empty fields match every cell. `arch` matches a cell whose
// arch list contains it ("9.0" matches "9.0;12.0a").
struct CellFilter {
  std::string package;
  std::string torch;
  std::string cuda;
  std::string python;
  std::string arch;
  std::optional<CellState> state;
  bool Matches(const Cell& cell) const;
};

// The filter of the given values; InvalidArgument naming the states for an unknown
// `state` ("" matches every state).
Result<CellFilter> MakeFilter(std::string package, std::string torch, std::string cuda,
                              std::string python, std::string arch, const std::string& state);

// The cell as farm.v1.CoverageCell (the gRPC answer).
farm::v1::CoverageCell CellProto(const Cell& cell);

// The cells of `builds` (any order), sorted by key.
std::vector<Cell> ComputeCoverage(const std::vector<BuildFacts>& builds);

// The wheels of `job` that count: its current attempt's, or the copies of a reused job.
std::vector<store::ArtifactRow> CountedWheels(const store::JobRow& job,
                                              const std::vector<store::ArtifactRow>& artifacts);

// The wheel's validation state (store::ValidationStateValue): its column, or its stored
// report's state for a row whose column was never set.
int ValidationStateOf(const store::ArtifactRow& wheel);

// When the wheels of build job `job` passed validation: the finish of the newest succeeded
// validation job of it in `jobs`, else the job's own finish (it validated while building).
int64_t ValidatedAt(const store::JobRow& job, const std::vector<store::JobRow>& jobs);

// The newest `max_builds` builds (of `recipe_name` when not ""), newest first, with their
// jobs and wheels; failed builds also get their schedule.
Result<std::vector<BuildFacts>> ReadRecentBuilds(store::Store& store,
                                                 const std::string& recipe_name, int max_builds);

// How many builds coverage and the feed look back at most.
inline constexpr int kMaxCoverageBuilds = 1000;

}  // namespace farm::coverage

#endif  // FARM_DAEMON_COVERAGE_COVERAGE_H_
