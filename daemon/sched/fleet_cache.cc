#include "daemon/sched/fleet_cache.h"

#include <functional>
#include <string_view>

#include "daemon/sched/rows.h"

namespace farm::sched {
namespace {

// What placement tells apart of a worker's state (sched/waiting.cc): idle and busy alike.
std::string_view PlacementState(store::WorkerState state) {
  return store::IsAway(state) ? store::WorkerStateName(state) : "up";
}

}  // namespace

std::string FleetCache::Fingerprint(const std::vector<store::WorkerRow>& rows) {
  std::string out;
  out.reserve(rows.size() * 48);
  for (const store::WorkerRow& w : rows) {
    out += w.id;
    out += '\0';
    out += w.name;
    out += '\0';
    out += PlacementState(w.state);
    out += w.drain_requested ? '1' : '0';
    // The capabilities by size and hash: the blob itself can be kilobytes per worker.
    out += std::to_string(w.capabilities.size()) + ':' +
           std::to_string(std::hash<std::string>{}(w.capabilities));
    out += '\n';
  }
  return out;
}

std::shared_ptr<const FleetView> FleetCache::Get(const std::vector<store::WorkerRow>& rows) {
  std::string fingerprint = Fingerprint(rows);
  {
    std::lock_guard lock(mu_);
    if (view_ && fingerprint == fingerprint_) return view_;
  }
  auto view = std::make_shared<FleetView>();
  for (const auto& w : rows) view->names[w.id] = w.name;
  view->fleet = FleetOf(rows);
  view->peers = AvailablePeers(view->fleet);
  std::lock_guard lock(mu_);
  fingerprint_ = std::move(fingerprint);
  view_ = view;
  ++builds_;
  return view;
}

int64_t FleetCache::builds() const {
  std::lock_guard lock(mu_);
  return builds_;
}

}  // namespace farm::sched
