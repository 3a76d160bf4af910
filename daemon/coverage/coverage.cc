#include "daemon/coverage/coverage.h"

#include <algorithm>
#include <array>
#include <set>

#include "common/clock.h"
#include "common/recipe/cell_settings.h"
#include "common/recipe/matrix.h"

namespace farm::coverage {

namespace {

struct StateNames {
  CellState state;
  std::string_view name;
  std::string_view words;
};

// The one name table of CellState.
constexpr std::array<StateNames, 6> kStates = {{
    {CellState::kValidated, "validated", "built and validated"},
    {CellState::kPendingHardware, "pending_hardware", "built, validation pending hardware"},
    {CellState::kBuilt, "built", "built, no validation asked"},
    {CellState::kFailed, "failed", "failed"},
    {CellState::kInProgress, "in_progress", "in progress"},
    {CellState::kMissing, "missing", "missing"},
}};

const StateNames& Names(CellState state) {
  for (const StateNames& n : kStates) {
    if (n.state == state) return n;
  }
  return kStates.back();
}

// The build's recipe name (its column, which every build has) is the package.
CellKey KeyOf(const BuildFacts& facts, const farm::v1::MatrixCell& cell) {
  return CellKey{.package = facts.build.recipe_name,
                 .version = facts.recipe.version(),
                 .torch = cell.torch(),
                 .cuda = cell.cuda(),
                 .python = cell.python(),
                 .arch_list = cell.arch_list(),
                 .platform = cell.platform()};
}

bool IsBuildJob(const store::JobRow& job) { return job.kind != store::kJobValidate; }

// The state of a succeeded job's cell from its wheels' validation states.
void StateFromWheels(const std::vector<store::ArtifactRow>& wheels, Cell* cell) {
  bool pending = false, passed = !wheels.empty();
  for (const store::ArtifactRow& a : wheels) {
    farm::v1::ValidationReport report;
    report.ParseFromString(a.validation);
    int state = ValidationStateOf(a);
    if (state == store::kValidationFailed) {
      cell->state = CellState::kFailed;
      cell->cause = "validation failed: " + report.message();
      return;
    }
    if (state == store::kValidationPendingHardware) {
      pending = true;
      if (cell->cause.empty()) cell->cause = report.message();
    }
    if (state != store::kValidationPassed) passed = false;
  }
  if (pending) {
    cell->state = CellState::kPendingHardware;
  } else if (passed) {
    cell->state = CellState::kValidated;
  } else {
    cell->state = CellState::kBuilt;
  }
}

Cell CellOfJob(const BuildFacts& facts, const store::JobRow& job) {
  farm::v1::MatrixCell mc;
  mc.ParseFromString(job.cell);
  Cell cell{.key = KeyOf(facts, mc),
            .job_id = job.id,
            .build_id = job.build_id,
            .release_candidate = job.release_candidate};
  switch (job.state) {
    case store::kJobPending:
    case store::kJobRunning:
      cell.state = CellState::kInProgress;
      return cell;
    case store::kJobFailed:
      cell.state = CellState::kFailed;
      cell.cause = job.error.empty() ? "the job failed" : job.error;
      cell.built_ms = job.finished_ms;
      return cell;
    default:
      break;
  }
  auto it = facts.artifacts.find(job.id);
  std::vector<store::ArtifactRow> wheels = CountedWheels(
      job, it == facts.artifacts.end() ? std::vector<store::ArtifactRow>{} : it->second);
  cell.built_ms = job.finished_ms;
  if (!wheels.empty()) cell.wheel = wheels.front().filename;
  StateFromWheels(wheels, &cell);
  if (cell.state == CellState::kValidated) cell.validated_ms = ValidatedAt(job, facts.jobs);
  if (cell.release_candidate && cell.cause.empty()) {
    auto release = facts.recipe.environment().torch().find(mc.torch());
    cell.cause =
        "release candidate: built against torch " +
        (release == facts.recipe.environment().torch().end() ? mc.torch() : release->second) +
        " before its final release";
  }
  // A cell this build made (not answered from an earlier build) answers the upstream release
  // whose watch fired it: the time from its publication to the validated wheel (the built
  // one, when the recipe asks for no validation or its validation waits for a GPU).
  int64_t ready_ms = cell.state == CellState::kValidated ? cell.validated_ms
                     : cell.state == CellState::kBuilt || cell.state == CellState::kPendingHardware
                         ? cell.built_ms
                         : 0;
  if (facts.upstream_ms > 0 && ready_ms > 0 && job.reused_from == 0) {
    cell.release_to_wheel_seconds = std::max<int64_t>(0, (ready_ms - facts.upstream_ms) / 1000);
  }
  return cell;
}

// A stable-ABI wheel validated with another torch than it was built with (a fan-out of
// its matrix, or a torch released after its build, builds/new_torch.h): that torch's
// cell, decided by the validation job. nullopt for any other validation job.
std::optional<Cell> CellOfProof(const BuildFacts& facts, const store::JobRow& v) {
  auto target = std::find_if(facts.jobs.begin(), facts.jobs.end(),
                             [&v](const store::JobRow& j) { return j.id == v.target_job_id; });
  if (target == facts.jobs.end() || target->cell == v.cell || v.state == store::kJobCancelled) {
    return std::nullopt;
  }
  farm::v1::MatrixCell mc;
  mc.ParseFromString(v.cell);
  farm::v1::JobNeeds needs;
  needs.ParseFromString(v.needs);
  const std::string torch = needs.new_torch().empty() ? mc.torch() : needs.new_torch();
  Cell cell{.key = KeyOf(facts, mc), .job_id = v.id, .build_id = v.build_id};
  if (auto it = facts.artifacts.find(target->id); it != facts.artifacts.end()) {
    for (const store::ArtifactRow& a : it->second) {
      if (a.attempt == v.target_attempt) {
        cell.wheel = a.filename;
        break;
      }
    }
  }
  cell.built_ms = target->finished_ms;
  switch (v.state) {
    case store::kJobSucceeded:
      cell.state = CellState::kValidated;
      cell.cause =
          "validated on " + torch + " without a rebuild (job " + std::to_string(v.id) + ")";
      cell.validated_ms = v.finished_ms;
      break;
    case store::kJobFailed:
      cell.state = CellState::kFailed;
      cell.cause = "validation on " + torch + " failed (no rebuild): " + v.error;
      break;
    case store::kJobRunning:
      cell.state = CellState::kInProgress;
      break;
    default:  // pending: never leased yet, it waits for a GPU the wheel runs on
      cell.state = v.attempt == 0 ? CellState::kPendingHardware : CellState::kInProgress;
      if (v.attempt == 0) {
        cell.cause = "validation-only job " + std::to_string(v.id) + " on " + torch +
                     " waits for a GPU the wheel runs on";
      }
  }
  return cell;
}

// Whether `cell` decides its key instead of `held`: a final release's job beats a release
// candidate's; among equals, the newest job.
bool Supersedes(const Cell& cell, const Cell& held) {
  if (cell.release_candidate != held.release_candidate) return held.release_candidate;
  return cell.job_id > held.job_id;
}

}  // namespace

std::string_view CellStateName(CellState state) { return Names(state).name; }
std::string_view CellStateWords(CellState state) { return Names(state).words; }

std::optional<CellState> ParseCellState(std::string_view name) {
  for (const StateNames& n : kStates) {
    if (n.name == name) return n.state;
  }
  return std::nullopt;
}

const std::vector<CellState>& AllCellStates() {
  static const std::vector<CellState> all = [] {
    std::vector<CellState> v;
    for (const StateNames& n : kStates) v.push_back(n.state);
    return v;
  }();
  return all;
}

bool CellFilter::Matches(const Cell& cell) const {
  if (!package.empty() && cell.key.package != package) return false;
  if (!torch.empty() && cell.key.torch != torch) return false;
  if (!cuda.empty() && cell.key.cuda != cuda) return false;
  if (!python.empty() && cell.key.python != python) return false;
  if (!arch.empty()) {
    bool found = false;
    std::string_view list = cell.key.arch_list;
    while (!found && !list.empty()) {
      size_t cut = list.find_first_of("; ");
      found = list.substr(0, cut) == arch;
      list = cut == std::string_view::npos ? std::string_view() : list.substr(cut + 1);
    }
    if (!found) return false;
  }
  return !state || cell.state == *state;
}

Result<CellFilter> MakeFilter(std::string package, std::string torch, std::string cuda,
                              std::string python, std::string arch, const std::string& state) {
  CellFilter filter{.package = std::move(package),
                    .torch = std::move(torch),
                    .cuda = std::move(cuda),
                    .python = std::move(python),
                    .arch = std::move(arch)};
  if (state.empty()) return filter;
  filter.state = ParseCellState(state);
  if (!filter.state) {
    std::string names;
    for (const StateNames& n : kStates) names += (names.empty() ? "" : ", ") + std::string(n.name);
    return Status::InvalidArgument("unknown state; one of " + names);
  }
  return filter;
}

farm::v1::CoverageCell CellProto(const Cell& c) {
  farm::v1::CoverageCell p;
  p.set_package(c.key.package);
  p.set_version(c.key.version);
  p.set_torch(c.key.torch);
  p.set_cuda(c.key.cuda);
  p.set_python(c.key.python);
  p.set_arch_list(c.key.arch_list);
  p.set_platform(c.key.platform);
  p.set_state(std::string(CellStateName(c.state)));
  p.set_state_words(std::string(CellStateWords(c.state)));
  p.set_cause(c.cause);
  p.set_job_id(c.job_id);
  p.set_build_id(c.build_id);
  p.set_wheel(c.wheel);
  p.set_built_at(FormatRfc3339(c.built_ms));
  p.set_validated_at(FormatRfc3339(c.validated_ms));
  if (c.release_to_wheel_seconds) p.set_release_to_wheel_seconds(*c.release_to_wheel_seconds);
  p.set_release_candidate(c.release_candidate);
  return p;
}

std::vector<store::ArtifactRow> CountedWheels(const store::JobRow& job,
                                              const std::vector<store::ArtifactRow>& artifacts) {
  std::vector<store::ArtifactRow> out;
  for (const store::ArtifactRow& a : artifacts) {
    if (a.attempt == job.attempt || a.attempt == 0) out.push_back(a);
  }
  return out;
}

int ValidationStateOf(const store::ArtifactRow& wheel) {
  if (wheel.validation_state > store::kValidationUnspecified) return wheel.validation_state;
  farm::v1::ValidationReport report;
  report.ParseFromString(wheel.validation);
  return report.state();
}

int64_t ValidatedAt(const store::JobRow& job, const std::vector<store::JobRow>& jobs) {
  int64_t best_id = 0, at = job.finished_ms;
  for (const store::JobRow& v : jobs) {
    // Only a validation in the job's own cell: a stable-ABI wheel's validations in its
    // other torches (daemon/sched/fanout.h) are not this cell's.
    if (v.kind == store::kJobValidate && v.target_job_id == job.id && v.cell == job.cell &&
        v.state == store::kJobSucceeded && v.id > best_id) {
      best_id = v.id;
      at = v.finished_ms;
    }
  }
  return at;
}

std::vector<Cell> ComputeCoverage(const std::vector<BuildFacts>& builds) {
  std::map<CellKey, Cell> cells;
  std::map<std::string, const BuildFacts*> newest;  // by package
  for (const BuildFacts& facts : builds) {
    const BuildFacts*& n = newest[facts.build.recipe_name];
    if (n == nullptr || facts.build.id > n->build.id) n = &facts;
    for (const store::JobRow& job : facts.jobs) {
      std::optional<Cell> proof;
      if (!IsBuildJob(job) && !(proof = CellOfProof(facts, job))) continue;
      if (IsBuildJob(job) && job.state == store::kJobCancelled) continue;
      Cell cell = proof ? std::move(*proof) : CellOfJob(facts, job);
      auto [it, added] = cells.try_emplace(cell.key, cell);
      if (!added && Supersedes(cell, it->second)) it->second = std::move(cell);
    }
  }
  // The newest matrix of each package: its cells that no job built are missing.
  // A recipe without a matrix has one cell, the default, which its build's job covers.
  for (const auto& [package, facts] : newest) {
    if (!recipe::HasAxes(facts->recipe.matrix())) continue;
    recipe::MatrixExpansion expansion = recipe::ExpandRecipe(farm::v1::MatrixAxes(), facts->recipe);
    for (const farm::v1::MatrixCell& mc : expansion.cells) {
      CellKey key = KeyOf(*facts, mc);
      if (cells.count(key)) continue;
      cells.emplace(key, Cell{.key = key,
                              .state = CellState::kMissing,
                              .cause = "in the matrix of build " + std::to_string(facts->build.id) +
                                       "; no job built it",
                              .build_id = facts->build.id});
    }
  }
  std::vector<Cell> out;
  out.reserve(cells.size());
  for (auto& [key, cell] : cells) out.push_back(std::move(cell));
  // Release order, not text order: torch 2.8 before 2.10, Python 3.9 before 3.11.
  std::stable_sort(out.begin(), out.end(), [](const Cell& x, const Cell& y) {
    const CellKey& a = x.key;
    const CellKey& b = y.key;
    for (auto [p, q] : {std::pair{&a.package, &b.package},
                        {&a.version, &b.version},
                        {&a.torch, &b.torch},
                        {&a.cuda, &b.cuda},
                        {&a.python, &b.python},
                        {&a.arch_list, &b.arch_list},
                        {&a.platform, &b.platform}}) {
      if (*p != *q) return recipe::VersionLess(*p, *q);
    }
    return false;
  });
  return out;
}

Result<std::vector<BuildFacts>> ReadRecentBuilds(store::Store& store,
                                                 const std::string& recipe_name, int max_builds) {
  constexpr int kPage = 200;
  std::vector<store::BuildRow> rows;
  int64_t before = 0;
  while (static_cast<int>(rows.size()) < max_builds) {
    int limit = std::min(kPage, max_builds - static_cast<int>(rows.size()));
    store::BuildFilter filter{.recipe_name = recipe_name};
    FARM_ASSIGN_OR_RETURN(auto page, recipe_name.empty()
                                         ? store.ListBuilds(before, limit)
                                         : store.ListBuildsMatching(filter, before, limit));
    if (page.empty()) break;
    before = page.back().id;
    for (auto& b : page) rows.push_back(std::move(b));
    if (static_cast<int>(page.size()) < limit) break;
  }
  std::vector<int64_t> build_ids;
  for (const auto& b : rows) build_ids.push_back(b.id);
  FARM_ASSIGN_OR_RETURN(auto jobs, store.ListJobsOfBuilds(build_ids));
  std::vector<int64_t> job_ids;
  for (const auto& [id, list] : jobs) {
    for (const auto& j : list) job_ids.push_back(j.id);
  }
  FARM_ASSIGN_OR_RETURN(auto artifacts, store.ListArtifactsOfJobs(job_ids));
  FARM_ASSIGN_OR_RETURN(auto runs, store.ListScheduleRunsOfBuilds(build_ids));
  FARM_ASSIGN_OR_RETURN(auto publications, store.ListPublicationsOfBuilds(build_ids));
  std::vector<BuildFacts> out;
  out.reserve(rows.size());
  for (auto& b : rows) {
    BuildFacts facts;
    facts.recipe.ParseFromString(b.recipe);
    if (auto it = jobs.find(b.id); it != jobs.end()) facts.jobs = std::move(it->second);
    for (const auto& j : facts.jobs) {
      if (auto it = artifacts.find(j.id); it != artifacts.end()) facts.artifacts[j.id] = it->second;
    }
    if (auto it = runs.find(b.id); it != runs.end()) {
      for (const auto& r : it->second)
        facts.upstream_ms = std::max(facts.upstream_ms, r.upstream_ms);
    }
    if (b.state == store::kBuildFailed) {
      FARM_ASSIGN_OR_RETURN(facts.schedule_id, store.ScheduleOfBuild(b.id));
    }
    if (auto it = publications.find(b.id); it != publications.end()) {
      for (auto& p : it->second) {
        if (p.state == store::PublicationState::kRefused) facts.refused.push_back(std::move(p));
      }
    }
    facts.build = std::move(b);
    out.push_back(std::move(facts));
  }
  return out;
}

}  // namespace farm::coverage
