// The events coverage announces: a wheel that passed validation, and a build that failed
// (a failed build of a schedule run is a release-day failure). The Atom feed
// (/feeds/wheels.atom) lists them and the webhooks (daemon/notify/) deliver them; both derive
// them from the same BuildFacts, so an event is found again, with the same id, however often
// it is looked for: the id is what makes delivery idempotent.
// Pure functions; thread-safe.
#ifndef FARM_DAEMON_COVERAGE_EVENTS_H_
#define FARM_DAEMON_COVERAGE_EVENTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/coverage/coverage.h"
#include "daemon/store/request_store.h"

namespace farm::coverage {

enum class EventKind {
  kWheelValidated,  // a wheel passed validation on a GPU
  kBuildFailed,     // a build ended failed
  // A wheel built whose validation waits for a GPU it runs on, or whose recipe asks for
  // none: on a farm without such a GPU this is the news.
  kWheelBuilt,
  kPublicationRefused,  // a wheel was too large for a publishing destination
  // A stable-ABI wheel validated (or failed) with another torch than it was built with,
  // without a rebuild: its matrix's other torches, or a torch released after its build.
  kTorchProof,
  // The wheel of a request (docs/requests.md) is ready: its job's wheel was validated or
  // built (the first of the two found announces it).
  kRequestBuilt,
};

// "wheel_validated", "build_failed", "wheel_built", "publication_refused", "torch_proof",
// "request_built": the names of the webhook filter and of payloads.
std::string_view EventKindName(EventKind kind);
std::optional<EventKind> ParseEventKind(std::string_view name);

struct Event {
  EventKind kind = EventKind::kWheelValidated;
  // Stable and unique: "wheel_validated:<sha256>" (a wheel reused by later builds is the
  // same wheel, announced once), "wheel_built:<sha256>", "build_failed:<build id>" or
  // "publication_refused:<build id>:<artifact id>:<target>" or "torch_proof:<job id>".
  std::string id;
  std::string package;
  std::string version;
  int64_t build_id = 0;
  int64_t job_id = 0;  // the validated or building job, or the build's first failed job
  std::string wheel;   // the wheel's file name; "" for a failed build
  std::string sha256;  // the wheel's; "" for a failed build
  std::string cell;    // "python=3.11 cuda=12.8 ...", "" for the default cell
  // Why the build failed; for a built wheel, why it is not validated; for a refused
  // publication, why it was refused.
  std::string cause;
  std::string target;  // the refused publication's destination ("github", "hf")
  std::string torch;   // a torch proof: the torch validated with ("2.12.0"); a candidate's minor
  int64_t schedule_id = 0;  // > 0: a schedule run submitted the build
  int64_t time_ms = 0;      // when it validated, was built or failed
  // A wheel built against a torch release candidate (JobRow::release_candidate): its title
  // says so, and webhooks carry "release_candidate": true.
  bool release_candidate = false;
};

// The events of `builds`, newest first (ties by id), at most `limit`.
std::vector<Event> EventsOf(const std::vector<BuildFacts>& builds, size_t limit);

// EventsOf, with a request_built event ("request_built:<request id>") for each of `requests`
// whose job made a wheel those builds announce (a request answered with a stored wheel has
// that wheel's job); its cause says how many asked. Newest first, at most `limit`.
std::vector<Event> EventsWithRequests(const std::vector<BuildFacts>& builds,
                                      const std::vector<store::RequestRow>& requests, size_t limit);

// One line for people: "attn_example 0.1: attn_example-0.1-...whl validated (job 3)".
std::string EventTitle(const Event& event);

}  // namespace farm::coverage

#endif  // FARM_DAEMON_COVERAGE_EVENTS_H_
