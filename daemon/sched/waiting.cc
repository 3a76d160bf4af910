#include "daemon/sched/waiting.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "common/arch.h"
#include "common/clock.h"

namespace farm::sched {
namespace {

// What a worker misses, read from the blocker's sentence (MissingRequirement's,
// PlacementBlocker's or ValidationBlocker's; their first words are pinned by the unit
// tests, so a rewording there fails here visibly).
enum class Lack {
  kNone,
  kQuarantined,
  kPlatform,
  kPython,
  kToolkit,
  kRam,
  kTargetGpu,  // a validation, or a build on its target GPU: no GPU of the right cc
  kValidatedBefore,
  kOther
};

Lack Classify(const std::string& missing) {
  auto starts = [&](const char* p) { return missing.rfind(p, 0) == 0; };
  if (missing.empty()) return Lack::kNone;
  if (starts("quarantined")) return Lack::kQuarantined;
  if (starts("platform ")) return Lack::kPlatform;
  if (starts("no Python")) return Lack::kPython;
  if (starts("no CUDA toolkit")) return Lack::kToolkit;
  if (starts("not enough RAM")) return Lack::kRam;
  if (starts("no GPU the wheels run on") || starts("the recipe builds on the GPU it targets")) {
    return Lack::kTargetGpu;
  }
  if (starts("validated these wheels before")) return Lack::kValidatedBefore;
  return Lack::kOther;
}

std::string JoinNames(const std::vector<std::string>& names, const char* last = " and ") {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == names.size() ? last : ", ") + names[i];
  }
  return out;
}

// The first few of `names` and a count of the others: a summary stays one line in a fleet
// of thousands.
std::vector<std::string> FirstNames(const std::vector<std::string>& names, size_t count) {
  constexpr size_t kShown = 5;
  if (count <= kShown + 1 && names.size() == count) return names;
  std::vector<std::string> out(names.begin(), names.begin() + std::min(kShown, names.size()));
  out.push_back(std::to_string(count - out.size()) + " more");
  return out;
}

// "build" or "validate": what the job asks of a worker, for the summaries.
const char* Verb(const PendingFacts& facts) { return facts.validation ? "validate" : "build"; }

// "a GPU of cc 12.0" (or "cc 9.0 or 12.0"): the GPUs the job needs to run on; "a GPU" when
// any serves. A validation job names them in its needs, a build on its target GPU in its
// arch list.
std::string GpuWanted(const farm::v1::MatrixCell& cell, const PendingFacts& facts) {
  std::vector<std::string> ccs(facts.needs.gpu_ccs().begin(), facts.needs.gpu_ccs().end());
  if (!facts.validation) {
    auto targets = arch::ParseArchList(cell.arch_list());
    if (targets.ok()) {
      for (const auto& v : arch::RunsOn(*targets)) ccs.push_back(v.ToString());
    }
  }
  return ccs.empty() ? "a GPU" : "a GPU of cc " + JoinNames(ccs, " or ");
}

// What stops a worker from taking the job, leaving aside whether it is away or busy.
std::string BlockerOf(const farm::v1::MatrixCell& cell, const PendingFacts& facts,
                      const FleetWorker& w, const std::vector<PeerWorker>& peers) {
  return facts.validation ? ValidationBlocker(cell, facts.needs, w.caps, w.id)
                          : PlacementBlocker(cell, w.caps, peers, facts.needs, facts.memory);
}

bool HasCudaVersion(const std::string& cuda, const std::vector<FleetWorker>& fleet) {
  for (const auto& w : fleet) {
    for (const auto& tk : w.caps.toolkits()) {
      if (tk.version() == cuda || tk.version().rfind(cuda + ".", 0) == 0) return true;
    }
  }
  return false;
}

// The sentence for a fleet in which every worker misses the same thing.
std::string SameLackSummary(Lack lack, const farm::v1::MatrixCell& cell, const PendingFacts& facts,
                            const std::vector<FleetWorker>& fleet) {
  const std::string verb = Verb(facts);
  switch (lack) {
    case Lack::kQuarantined:
      return "every worker that could " + verb +
             " it is quarantined (its GPU probe failed): fix the GPU or driver and restart "
             "farm-worker";
    case Lack::kPlatform:
      return "no worker runs " + cell.platform() + ": add one or drop the cell";
    case Lack::kPython:
      return "no worker has Python " + (cell.python().empty() ? "" : cell.python()) +
             (cell.torch().empty() ? "" : " with torch " + cell.torch()) +
             ": install it on a worker or drop the cell";
    case Lack::kToolkit:
      if (!cell.cuda().empty() && !HasCudaVersion(cell.cuda(), fleet)) {
        return "no worker has CUDA " + cell.cuda() + ": provision one or drop the cell";
      }
      return "no worker has a CUDA " + (cell.cuda().empty() ? "" : cell.cuda() + " ") +
             "toolkit that emits " + cell.arch_list() +
             ": install a newer toolkit on a worker or drop those archs";
    case Lack::kRam:
      return "no worker has the RAM for one compile job: add a worker with more memory or "
             "lower the recipe's gb_per_compile_job";
    case Lack::kTargetGpu:
      if (facts.validation) {
        return "no worker with " + GpuWanted(cell, facts) +
               " can validate it: add one (its wheels wait for hardware until then)";
      }
      return "no worker with " + GpuWanted(cell, facts) +
             " can build it (the recipe builds on its target GPU): add one or drop the cell";
    case Lack::kValidatedBefore:
      return "every worker with " + GpuWanted(cell, facts) +
             " validated these wheels before: an automatic retry waits for another one";
    default:
      if (facts.validation) {
        return "no worker can validate it: it needs " + GpuWanted(cell, facts) +
               " on a worker with the cell's platform and Python";
      }
      return "no worker can build it: provision one with everything the cell needs or drop "
             "the cell";
  }
}

// The summary when no available worker can take the job: a lost or draining worker that
// could, else what the fleet misses.
void ExplainNoneAble(const farm::v1::MatrixCell& cell, const PendingFacts& facts,
                     const std::vector<FleetWorker>& fleet, Waiting* out) {
  std::vector<std::string> sleeping;
  std::vector<Lack> lacks;
  for (const auto& w : fleet) {
    bool lost = w.state == store::WorkerState::kLost;
    bool away = lost || w.state == store::WorkerState::kDraining || w.drain_requested;
    Lack lack = Classify(BlockerOf(cell, facts, w, {}));
    if (away && lack == Lack::kNone) {
      sleeping.push_back(w.name + (lost ? " (lost)" : " (draining)"));
    } else if (lack != Lack::kNone) {
      lacks.push_back(lack);
    }
  }
  if (!sleeping.empty()) {
    out->summary = "only " + JoinNames(sleeping) + " can " + Verb(facts) +
                   " it: bring it back or undrain it, or add a worker that can";
    return;
  }
  out->unplaceable = true;
  // Workers that validated the wheels before and workers without the GPU: nobody else has it.
  if (std::find(lacks.begin(), lacks.end(), Lack::kValidatedBefore) != lacks.end()) {
    std::replace(lacks.begin(), lacks.end(), Lack::kTargetGpu, Lack::kValidatedBefore);
  }
  bool same = !lacks.empty() &&
              std::all_of(lacks.begin(), lacks.end(), [&](Lack l) { return l == lacks.front(); });
  out->summary = SameLackSummary(same ? lacks.front() : Lack::kOther, cell, facts, fleet);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> ReasonEntries(
    const std::vector<WorkerBlock>& blocked, size_t max_entries) {
  auto key = [](const WorkerBlock& b) { return b.worker_name + " (" + b.worker_id + ")"; };
  std::vector<std::pair<std::string, std::string>> out;
  if (blocked.size() <= max_entries) {
    for (const auto& b : blocked) out.emplace_back(key(b), b.reason);
    return out;
  }
  struct Group {
    const WorkerBlock* first;
    size_t count;
  };
  std::vector<Group> groups;
  std::unordered_map<std::string_view, size_t> index;  // reason -> its group
  for (const auto& b : blocked) {
    auto [it, added] = index.try_emplace(b.reason, groups.size());
    if (added) groups.push_back({&b, 0});
    ++groups[it->second].count;
  }
  std::stable_sort(groups.begin(), groups.end(),
                   [](const Group& a, const Group& b) { return a.count > b.count; });
  size_t shown = std::min(groups.size(), max_entries);
  if (shown < groups.size() && shown > 0) --shown;  // room for the count of the rest
  size_t left_out = blocked.size();
  for (size_t i = 0; i < shown; ++i) {
    const Group& g = groups[i];
    std::string name = key(*g.first);
    if (g.count > 1) {
      name += " and " + std::to_string(g.count - 1) + " other worker" + (g.count > 2 ? "s" : "");
    }
    out.emplace_back(std::move(name), g.first->reason);
    left_out -= g.count;
  }
  if (left_out > 0) {
    out.emplace_back("(" + std::to_string(left_out) + " other workers)",
                     std::to_string(groups.size() - shown) +
                         " other reasons; the dashboard's job page lists every worker's");
  }
  return out;
}

std::vector<PeerWorker> AvailablePeers(const std::vector<FleetWorker>& fleet) {
  std::vector<PeerWorker> peers;
  for (const auto& w : fleet) {
    if (w.drain_requested) continue;
    if (store::IsAway(w.state)) continue;
    peers.push_back({w.name, w.caps, w.id});
  }
  return peers;
}

Waiting ExplainWaiting(const farm::v1::MatrixCell& cell, const PendingFacts& facts,
                       const std::vector<FleetWorker>& fleet,
                       const std::vector<PeerWorker>& peers) {
  Waiting out;
  // A job merged onto an identical one waits for it; it has the same cell and needs, so
  // when no worker can take this one, none can take that one either, and that is the reason.
  const bool merged = facts.not_before_ms == std::numeric_limits<int64_t>::max();
  // Placement per capability class: a fleet of a thousand alike workers costs one check.
  // A validation that excludes workers by id is decided per worker.
  bool by_class = !facts.validation || facts.needs.exclude_workers_size() == 0;
  std::vector<std::optional<std::string>> class_blocker;
  auto blocker = [&](const FleetWorker& w) {
    auto decide = [&] { return BlockerOf(cell, facts, w, peers); };
    if (!by_class || w.caps_class < 0) return decide();
    if (class_blocker.size() <= static_cast<size_t>(w.caps_class))
      class_blocker.resize(w.caps_class + 1);
    auto& known = class_blocker[w.caps_class];
    if (!known) known = decide();
    return *known;
  };
  for (const auto& w : fleet) {
    using store::WorkerState;
    std::string why = w.state == WorkerState::kLost ? "worker is lost"
                      : w.drain_requested || w.state == WorkerState::kDraining
                          ? "worker is draining"
                          : blocker(w);
    if (why.empty()) {
      if (out.able.size() < facts.max_able_names) out.able.push_back(w.name);
      ++out.able_count;
    } else {
      out.blocked.push_back({w.id, w.name, why});
    }
  }
  if (fleet.empty()) {
    out.unplaceable = true;
    out.summary = facts.validation ? "no worker is registered: start farm-worker on a host with " +
                                         GpuWanted(cell, facts)
                                   : "no worker is registered: start farm-worker on a host that "
                                     "can build it";
  } else if (out.able_count == 0) {
    ExplainNoneAble(cell, facts, fleet, &out);
  } else {
    out.summary = "waiting for a free worker: " + JoinNames(FirstNames(out.able, out.able_count)) +
                  " can " + Verb(facts) + " it";
  }
  if (merged) {
    std::string note = facts.note.empty() ? "waiting for an identical build in flight" : facts.note;
    out.summary = out.unplaceable ? note + ", which cannot run either: " + out.summary : note;
  } else if (!out.unplaceable && facts.not_before_ms > facts.now_ms) {
    out.summary = "retrying after a backoff, not before " + FormatRfc3339(facts.not_before_ms) +
                  "; " + out.summary;
  }
  return out;
}

}  // namespace farm::sched
