#include "daemon/sched/waiting.h"

#include <algorithm>
#include <limits>

#include "common/clock.h"

namespace farm::sched {
namespace {

// What a worker misses, read from MissingRequirement's sentence (its first words are
// pinned by the unit tests, so a rewording there fails here visibly).
enum class Lack { kNone, kQuarantined, kPlatform, kPython, kToolkit, kRam, kOther };

Lack Classify(const std::string& missing) {
  auto starts = [&](const char* p) { return missing.rfind(p, 0) == 0; };
  if (missing.empty()) return Lack::kNone;
  if (starts("quarantined")) return Lack::kQuarantined;
  if (starts("platform ")) return Lack::kPlatform;
  if (starts("no Python")) return Lack::kPython;
  if (starts("no CUDA toolkit")) return Lack::kToolkit;
  if (starts("not enough RAM")) return Lack::kRam;
  return Lack::kOther;
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  }
  return out;
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
std::string SameLackSummary(Lack lack, const farm::v1::MatrixCell& cell,
                            const std::vector<FleetWorker>& fleet) {
  switch (lack) {
    case Lack::kQuarantined:
      return "every worker that could build it is quarantined (its GPU probe failed): fix the "
             "GPU or driver and restart farm-worker";
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
    default:
      return "no worker can build it: provision one with everything the cell needs or drop "
             "the cell";
  }
}

// The summary when no available worker can take the job: a lost or draining worker that
// could, else what the fleet misses.
void ExplainNoneAble(const farm::v1::MatrixCell& cell, const JobMemory& memory,
                     const std::vector<FleetWorker>& fleet, Waiting* out) {
  std::vector<std::string> sleeping;
  std::vector<Lack> lacks;
  for (const auto& w : fleet) {
    bool away = w.state == "lost" || w.state == "draining" || w.drain_requested;
    Lack lack = Classify(MissingRequirement(cell, w.caps, memory));
    if (away && lack == Lack::kNone) {
      sleeping.push_back(w.name + (w.state == "lost" ? " (lost)" : " (draining)"));
    } else if (lack != Lack::kNone) {
      lacks.push_back(lack);
    }
  }
  if (!sleeping.empty()) {
    out->summary = "only " + JoinNames(sleeping) +
                   " can build it: bring it back or undrain it, or add a worker that can";
    return;
  }
  out->unplaceable = true;
  bool same = !lacks.empty() &&
              std::all_of(lacks.begin(), lacks.end(), [&](Lack l) { return l == lacks.front(); });
  out->summary = SameLackSummary(same ? lacks.front() : Lack::kOther, cell, fleet);
}

}  // namespace

std::vector<PeerWorker> AvailablePeers(const std::vector<FleetWorker>& fleet) {
  std::vector<PeerWorker> peers;
  for (const auto& w : fleet) {
    if (w.drain_requested) continue;
    if (w.state == "lost" || w.state == "quarantined" || w.state == "draining") continue;
    peers.push_back({w.name, w.caps, w.id});
  }
  return peers;
}

Waiting ExplainWaiting(const farm::v1::MatrixCell& cell, const PendingFacts& facts,
                       const std::vector<FleetWorker>& fleet,
                       const std::vector<PeerWorker>& peers) {
  Waiting out;
  if (facts.not_before_ms == std::numeric_limits<int64_t>::max()) {
    out.summary = facts.note.empty() ? "waiting for an identical build in flight" : facts.note;
    return out;
  }
  for (const auto& w : fleet) {
    std::string why = w.state == "lost" ? "worker is lost"
                      : w.drain_requested || w.state == "draining"
                          ? "worker is draining"
                          : facts.validation ? ValidationBlocker(cell, facts.needs, w.caps, w.id)
                                              : PlacementBlocker(cell, w.caps, peers, facts.needs, facts.memory);
    if (why.empty()) {
      out.able.push_back(w.name);
    } else {
      out.blocked.push_back({w.id, w.name, why});
    }
  }
  if (fleet.empty()) {
    out.unplaceable = true;
    out.summary = "no worker is registered: start farm-worker on a host that can build it";
  } else if (out.able.empty()) {
    ExplainNoneAble(cell, facts.memory, fleet, &out);
  } else {
    out.summary = "waiting for a free worker: " + JoinNames(out.able) + " can build it";
  }
  if (!out.unplaceable && facts.not_before_ms > facts.now_ms) {
    out.summary = "retrying after a backoff, not before " + FormatRfc3339(facts.not_before_ms) +
                  "; " + out.summary;
  }
  return out;
}

}  // namespace farm::sched
