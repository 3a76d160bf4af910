// Wheel requests (docs/requests.md): a user asks for the wheel of one cell, and the farm
// answers it itself. The use case both front ends (gRPC: farmctl request; HTTP: the
// install script and the dashboard's form) call, with no gRPC, JSON or SQL in it.
//
// Filing: the request's fields are checked first (a hostile value is refused and nothing
// is stored); then the filing counts against the filer's request quota and is stored in
// one transaction that merges it into the row of an identical request when one exists
// (store::RequestStore::FileRequest: a unique key in the store, so twenty identical
// requests filed at once make one row, and so one build). The filer of a new row (or of a
// row the farm refused earlier, which is matched again) decides it:
//   - matched against the newest recipe the farm stored under the package's name (the
//     recipe of its newest build or schedule, match.h): refused at once with the reason
//     when no recipe serves it;
//   - answered with the wheel when the cell's build key already succeeded;
//   - otherwise built, that one cell, by the recipe's owner (its quota, its names), with
//     the requester recorded in the audit log and on the request. An anonymous request
//     (allowed only when the farm says so, limited per address) stops before the build
//     and waits for an admin's approval.
// A request moves between states only by the store's compare-and-set (MoveRequest), so
// of racing deciders exactly one submits. Reading a request that is building looks at its
// job and records it built (with the wheel) or failed.
//
// Thread-safe: the dependencies are.
#ifndef FARM_DAEMON_REQUESTS_REQUESTS_H_
#define FARM_DAEMON_REQUESTS_REQUESTS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "daemon/audit/audit_log.h"
#include "daemon/auth/token_authority.h"
#include "daemon/builds/submit.h"
#include "daemon/requests/spec.h"
#include "daemon/requests/state.h"
#include "daemon/store/ports/build_reader.h"
#include "daemon/store/ports/recipe_name_store.h"
#include "daemon/store/ports/schedule_store.h"
#include "daemon/store/request_store.h"

namespace farm::requests {

struct Settings {
  int64_t window_ms = 3600 * 1000;
  // Filings per window of each principal (admins are not limited); < 0: unlimited.
  int64_t per_principal = 30;
  // Filings per window of each address without a token; 0: anonymous requests are off.
  int64_t anonymous_per_address = 0;
};

struct RequestDeps {
  store::RequestStore* requests = nullptr;
  store::BuildReader* builds = nullptr;
  store::ScheduleStore* schedules = nullptr;  // null: only builds' recipes are matched
  store::RecipeNameStore* names = nullptr;
  builds::Submitter* submitter = nullptr;
  // The principal a recipe's owner builds as (TokenAuthority::PrincipalNamed).
  std::function<Result<auth::Principal>(const std::string&)> principal_named;
  const Clock* clock = nullptr;
  audit::Recorder* audit = nullptr;  // null: nothing is recorded
  Settings settings;
};

// Who files: a principal, or nobody (no token) from `address`.
struct Filer {
  std::optional<auth::Principal> who;
  std::string address;
};

struct Filed {
  store::RequestRow row;
  bool merged = false;  // an identical request existed: this one follows it
};

class Requests {
 public:
  explicit Requests(RequestDeps deps) : deps_(std::move(deps)) {}

  // Files `spec` for `filer` and decides it when it is new (see above). InvalidArgument
  // for a hostile field, PermissionDenied for an anonymous filer where the farm takes
  // none, ResourceExhausted past the filer's request quota: nothing is stored for these.
  // A refusal by matching is an answer, not an error: the row says refused and why.
  Result<Filed> File(const Filer& filer, Spec spec);
  // The request `id`, refreshed from its job. NotFound for none.
  Result<store::RequestRow> Get(int64_t id);
  // Newest first (ids < before_id, 0: from the newest), in `state` when given, refreshed.
  Result<std::vector<store::RequestRow>> List(std::optional<State> state, int64_t before_id,
                                              int limit);
  // An admin builds a request that waits for approval (or matches a refused one again).
  // FailedPrecondition for a request in another state.
  Result<store::RequestRow> Approve(const auth::Principal& admin, int64_t id);
  // An admin refuses a request that is not built or refused yet, with `reason`.
  Result<store::RequestRow> Refuse(const auth::Principal& admin, int64_t id,
                                   const std::string& reason);

 private:
  struct Found;
  // The newest stored recipe (and its request) of `package`; nullopt when none.
  Result<std::optional<Found>> FindRecipe(const std::string& package);
  // Matches `row` (in state `row.state`) and moves it: refused, built, or, with `may_build`,
  // built by the recipe's owner for `requester`.
  Result<store::RequestRow> Decide(store::RequestRow row, bool may_build,
                                   const std::string& requester);
  // Submits the build of `row` (claimed: state approved) and moves it to building.
  Result<store::RequestRow> Build(store::RequestRow row, const Found& found,
                                  const farm::v1::SubmitBuildRequest& req,
                                  const std::string& requester);
  // Moves `row` from `from` to `to`'s state; returns the row as it then stands.
  Result<store::RequestRow> Move(State from, store::RequestRow to);
  Result<store::RequestRow> Refresh(store::RequestRow row);
  Status CheckAdmission(const Filer& filer);
  store::FilingLimit LimitFor(const Filer& filer) const;

  RequestDeps deps_;
};

// The spec a stored row was filed with.
Spec SpecOf(const store::RequestRow& row);

}  // namespace farm::requests

#endif  // FARM_DAEMON_REQUESTS_REQUESTS_H_
