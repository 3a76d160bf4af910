// Planning a submitted build (docs/recipes.md, docs/schedules.md#build-keys): the recipe
// read and checked, its source checked and a git branch resolved to its commit, a torch
// axis that follows the index resolved, the matrix expanded, each job given its build key
// (build_key.h) and looked up among the succeeded jobs, and the same for every recipe it
// requires, before anything is stored.
//
// Stable ABI (docs/recipes.md, "Torch ABI"): a recipe with torch_abi.stable is planned by
// recipe::PlanExpansion, one job per planned build, in its build cell, carrying the cells
// its wheel is validated in (JobNeeds.validate_in, part of its key); the validation jobs of
// the other cells are queued when it succeeds (sched/fanout.h). Other recipes: a job per
// cell.
//
// Environments (docs/environments.md, "Locks"): each cell of a recipe with an
// environment, and each cell a stable-ABI wheel is validated in, is resolved into a lock
// (locks/env_locker.h) before any key is made; the digests go into the job's needs
// (JobNeeds.lock_digest, validate_locks) and its key, so a resubmission is answered from
// the store only while upstream offers the same packages.
//
// Graphs (docs/recipes.md, "Requirements"): the request carries the recipes the recipe
// requires, read by the client. Every recipe of the graph is planned and checked; a job of
// a recipe with requirements keeps its key without the wheels it consumes in key_base
// (the key waits for them: KeyWithInputs), and each of its jobs is matched to the cell of
// each required build that serves it (MatchCells).
//
// Thread-safe: the dependencies are.
#ifndef FARM_DAEMON_BUILDS_PLAN_H_
#define FARM_DAEMON_BUILDS_PLAN_H_

#include <cstddef>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/git_policy.h"
#include "common/status.h"
#include "common/upstream/fetcher.h"
#include "daemon/builds/sources.h"
#include "daemon/cron/new_schedule.h"
#include "daemon/cron/source_resolver.h"
#include "daemon/store/ports/build_reader.h"
#include "farm/v1/client.pb.h"

namespace farm::locks {
class EnvLocker;
}  // namespace farm::locks

namespace farm::builds {

// A build planned but not stored: the checked recipe, its cells and jobs (keys set, reuse
// looked up), and the drafts of the recipes it requires.
struct BuildDraft {
  farm::v1::Recipe recipe;
  store::BuildRow build;
  std::vector<farm::v1::MatrixCell> cells;
  std::vector<store::JobRow> jobs;
  std::vector<BuildDraft> requirements;  // in recipe.requirements() order
  // For each requirement, the index of the required job of each of this build's jobs
  // (MatchCells).
  std::vector<std::vector<size_t>> required_index;
};

struct PlanDeps {
  store::BuildReader* builds = nullptr;  // the succeeded jobs that may answer a job
  SourceDeps sources;
  const Clock* clock = nullptr;
  cron::SourceResolver* resolver = nullptr;  // git ref -> commit; null: not resolved
  git::GitPolicy git;                        // which git URLs a build may name
  // The upstream indexes a torch axis that follows the index reads; `upstream_fetcher`
  // null: none is read.
  cron::WatchSettings watches;
  upstream::Fetcher* upstream_fetcher = nullptr;
  int max_attempts = 3;  // of a job whose recipe sets none
  // Resolves the lock of every provisioned cell (locks/env_locker.h); null: recipes with
  // an environment are refused.
  locks::EnvLocker* locker = nullptr;
};

// Plans `req` as submitted by `who`, requirements included. InvalidArgument (naming the
// recipe and the field) for what the recipe check refuses, FailedPrecondition for a
// source that cannot be used, Unavailable when an index a followed torch axis reads cannot
// be read.
Result<BuildDraft> PlanBuild(const PlanDeps& deps, const farm::v1::SubmitBuildRequest& req,
                             const std::string& who);

// Matches every job of `draft` to a job of each required build (the same platform,
// Python, CUDA and torch, where the required recipe has those axes, and an arch list that
// covers the job's), and keeps in the required builds only the jobs some job needs
// (recursively). InvalidArgument naming the cell no required cell serves.
Status MatchCells(BuildDraft* draft);

}  // namespace farm::builds

#endif  // FARM_DAEMON_BUILDS_PLAN_H_
