#include "daemon/requests/requests.h"

#include "common/log.h"
#include "common/recipe/recipe.h"
#include "common/wheel/wheel_name.h"
#include "daemon/requests/match.h"
#include "daemon/store/job_state.h"

namespace farm::requests {

struct Requests::Found {
  farm::v1::Recipe recipe;
  farm::v1::SubmitBuildRequest request;  // what builds it again, matrix aside
  std::string owner;                     // who builds it
  int64_t stored_ms = 0;
};

namespace {

constexpr int kMaxNewestScan = 1;
// How long a request may stay claimed (approved) before it counts as abandoned.
constexpr int64_t kClaimTimeoutMs = 10 * 60 * 1000;

// The submission that builds a stored recipe again: the recipe as farmd read it, its
// source as farmd checked it (an archive by digest, a git commit), its patches, script and
// lock.
farm::v1::SubmitBuildRequest RequestOf(const farm::v1::Recipe& recipe) {
  farm::v1::SubmitBuildRequest req;
  req.set_recipe_yaml(recipe.yaml());
  req.set_recipe_path("recipe.yaml");
  *req.mutable_source() = recipe.source();
  *req.mutable_patches() = recipe.patches();
  req.set_validation_script(recipe.validation().script_content());
  req.set_environment_lock(recipe.environment().lock());
  return req;
}

std::string Id(int64_t id) { return std::to_string(id); }

}  // namespace

Spec SpecOf(const store::RequestRow& row) {
  return Spec{.package = row.package,
              .version = row.version,
              .python = row.python,
              .torch = row.torch,
              .cuda = row.cuda,
              .compute_capability = row.compute_capability,
              .platform = row.platform};
}

store::FilingLimit Requests::LimitFor(const Filer& filer) const {
  const Settings& s = deps_.settings;
  int64_t since = deps_.clock->NowUnixMs() - s.window_ms;
  if (!filer.who) return {.max = s.anonymous_per_address, .since_ms = since};
  if (filer.who->role == "admin") return {};
  return {.max = s.per_principal, .since_ms = since};
}

Status Requests::CheckAdmission(const Filer& filer) {
  if (filer.who || deps_.settings.anonymous_per_address > 0) return Status::Ok();
  return Status::PermissionDenied(
      "this farm takes no anonymous requests: file it with a token (farmctl request, or "
      "FARM_TOKEN for the install script)");
}

Result<Filed> Requests::File(const Filer& filer, Spec spec) {
  FARM_RETURN_IF_ERROR(CheckSpec(&spec));
  FARM_RETURN_IF_ERROR(CheckAdmission(filer));
  const int64_t now = deps_.clock->NowUnixMs();
  const std::string by = filer.who ? filer.who->name : "";
  store::RequestRow row{.key = SpecKey(spec),
                        .package = spec.package,
                        .version = spec.version,
                        .python = spec.python,
                        .torch = spec.torch,
                        .cuda = spec.cuda,
                        .compute_capability = spec.compute_capability,
                        .platform = spec.platform,
                        .state = static_cast<int>(State::kRequested),
                        .first_by = by};
  store::RequestFiling filing{
      .principal = by, .address = filer.who ? "" : filer.address, .created_ms = now};
  FARM_ASSIGN_OR_RETURN(auto filed, deps_.requests->FileRequest(row, filing, LimitFor(filer)));
  auto& [stored, created] = filed;
  const bool matched_again =
      stored.state == static_cast<int>(State::kRefused) && stored.decided_by.empty();
  const bool waiting = stored.state == static_cast<int>(State::kRequested);
  Filed out{.row = stored, .merged = !created};
  // A new row is decided by its filer; so is one the farm refused (the farm may have a
  // recipe now) and, for a filer with a token, one that waits for approval.
  if (created || matched_again || (waiting && filer.who)) {
    FARM_ASSIGN_OR_RETURN(out.row, Decide(stored, filer.who.has_value(), by));
  } else {
    FARM_ASSIGN_OR_RETURN(out.row, Refresh(stored));
  }
  if (filer.who && deps_.audit != nullptr) {
    deps_.audit->Record(*filer.who,
                        {audit::Action::kRequestFile, "request " + Id(out.row.id),
                         std::string(StateName(static_cast<State>(out.row.state)))},
                        Status::Ok());
  }
  return out;
}

Result<std::optional<Requests::Found>> Requests::FindRecipe(const std::string& package) {
  std::optional<Found> best;
  std::vector<std::string> names{package};
  FARM_ASSIGN_OR_RETURN(auto owned, deps_.names->ListRecipeNames());
  for (const auto& n : owned) {
    if (n.name != package && wheel::NormalizeProjectName(n.name) == package) {
      names.push_back(n.name);
    }
  }
  for (const std::string& name : names) {
    FARM_ASSIGN_OR_RETURN(
        auto newest, deps_.builds->ListBuildsMatching({.recipe_name = name}, 0, kMaxNewestScan));
    if (newest.empty() || (best && best->stored_ms >= newest[0].created_ms)) continue;
    Found f{.owner = newest[0].submitted_by, .stored_ms = newest[0].created_ms};
    if (!f.recipe.ParseFromString(newest[0].recipe)) continue;
    f.request = RequestOf(f.recipe);
    best = std::move(f);
  }
  if (deps_.schedules != nullptr) {
    FARM_ASSIGN_OR_RETURN(auto schedules, deps_.schedules->ListSchedules());
    for (const store::ScheduleRow& s : schedules) {
      if (s.deleted_ms != 0 || wheel::NormalizeProjectName(s.recipe_name) != package) continue;
      if (best && best->stored_ms >= s.created_ms) continue;
      Found f{.owner = s.created_by, .stored_ms = s.created_ms};
      if (!f.request.ParseFromString(s.request)) continue;
      auto parsed = recipe::ParseRecipe(f.request.recipe_yaml(), "recipe.yaml");
      if (!parsed.ok()) continue;
      f.recipe = std::move(parsed).value();
      best = std::move(f);
    }
  }
  if (best) {
    FARM_ASSIGN_OR_RETURN(auto owner, deps_.names->GetRecipeName(best->recipe.name()));
    if (owner) best->owner = owner->owner;
  }
  return best;
}

Result<store::RequestRow> Requests::Move(State from, store::RequestRow to) {
  to.updated_ms = deps_.clock->NowUnixMs();
  FARM_ASSIGN_OR_RETURN(bool moved, deps_.requests->MoveRequest(static_cast<int>(from), to));
  if (moved) return to;
  return deps_.requests->GetRequest(to.id);
}

Result<store::RequestRow> Requests::Decide(store::RequestRow row, bool may_build,
                                           const std::string& requester) {
  const State from = static_cast<State>(row.state);
  store::RequestRow refused = row;
  refused.state = static_cast<int>(State::kRefused);
  refused.decided_by.clear();
  FARM_ASSIGN_OR_RETURN(std::optional<Found> found, FindRecipe(row.package));
  if (!found) {
    refused.reason = "no recipe on this farm builds " + row.package;
    return Move(from, refused);
  }
  auto matched = MatchRecipe(found->recipe, SpecOf(row));
  if (!matched.ok() && matched.status().code() != StatusCode::kFailedPrecondition) {
    return matched.status();
  }
  if (!matched.ok()) {
    refused.reason = matched.status().message();
    return Move(from, refused);
  }
  row.recipe_name = found->recipe.name();
  row.arch_list = matched->cell.arch_list();
  farm::v1::SubmitBuildRequest req = found->request;
  *req.mutable_matrix() = matched->axes;
  auto draft = deps_.submitter->Plan(req, found->owner);
  if (!draft.ok()) {
    refused.reason = "the recipe of " + found->recipe.name() +
                     " cannot build it now: " + draft.status().message();
    return Move(from, refused);
  }
  for (const store::JobRow& job : draft->jobs) {
    if (job.reused_from == 0) continue;
    FARM_ASSIGN_OR_RETURN(auto wheels, deps_.builds->ListArtifactsOfJobs({job.reused_from}));
    row.state = static_cast<int>(State::kBuilt);
    row.job_id = job.reused_from;
    FARM_ASSIGN_OR_RETURN(store::JobRow built, deps_.builds->GetJob(job.reused_from));
    row.build_id = built.build_id;
    row.wheel = wheels[job.reused_from].empty() ? "" : wheels[job.reused_from][0].filename;
    return Move(from, row);
  }
  if (!may_build) return Move(from, row);  // waits for an admin
  // Claimed by one compare-and-set: of deciders racing on the row, one builds.
  row.state = static_cast<int>(State::kApproved);
  row.updated_ms = deps_.clock->NowUnixMs();
  FARM_ASSIGN_OR_RETURN(bool won, deps_.requests->MoveRequest(static_cast<int>(from), row));
  if (!won) return deps_.requests->GetRequest(row.id);
  return Build(row, *found, req, requester);
}

Result<store::RequestRow> Requests::Build(store::RequestRow row, const Found& found,
                                          const farm::v1::SubmitBuildRequest& req,
                                          const std::string& requester) {
  const std::string who = requester.empty() ? "an anonymous requester" : requester;
  audit::Entry entry{.action = audit::Action::kBuildSubmit};
  Result<int64_t> id = Status::Internal("not submitted");
  auto owner = deps_.principal_named(found.owner);
  if (owner.ok()) {
    id = deps_.submitter->Submit(req, *owner, &entry);
    entry.done += " for request " + Id(row.id) + " by " + who;
    if (deps_.audit != nullptr) deps_.audit->Record(*owner, entry, id.status());
  } else {
    id = owner.status();
  }
  if (!id.ok()) {
    store::RequestRow refused = row;
    refused.state = static_cast<int>(State::kRefused);
    refused.reason = "the build of " + found.recipe.name() + " by its owner " + found.owner +
                     " was refused: " + id.status().message();
    return Move(State::kApproved, refused);
  }
  FARM_ASSIGN_OR_RETURN(auto jobs, deps_.builds->ListJobs(*id));
  row.state = static_cast<int>(State::kBuilding);
  row.build_id = *id;
  row.job_id = jobs.empty() ? 0 : jobs.front().id;
  log::Info("request " + Id(row.id) + " of " + row.package + " by " + who + ": build " + Id(*id) +
            " of " + found.recipe.name() + " by its owner " + found.owner);
  return Move(State::kApproved, row);
}

Result<store::RequestRow> Requests::Refresh(store::RequestRow row) {
  if (row.state == static_cast<int>(State::kApproved) &&
      deps_.clock->NowUnixMs() - row.updated_ms > kClaimTimeoutMs) {
    // Its decider died between the claim and the build (farmd killed): open it again, so
    // that the next filing or an admin decides it.
    store::RequestRow open = row;
    open.state = static_cast<int>(State::kRequested);
    return Move(State::kApproved, open);
  }
  if (row.state != static_cast<int>(State::kBuilding) || row.job_id == 0) return row;
  FARM_ASSIGN_OR_RETURN(store::JobRow job, deps_.builds->GetJob(row.job_id));
  store::RequestRow to = row;
  if (job.state == store::kJobSucceeded) {
    const int64_t wheel_job = job.reused_from != 0 ? job.reused_from : job.id;
    FARM_ASSIGN_OR_RETURN(auto wheels, deps_.builds->ListArtifactsOfJobs({wheel_job}));
    to.state = static_cast<int>(State::kBuilt);
    to.wheel = wheels[wheel_job].empty() ? "" : wheels[wheel_job][0].filename;
  } else if (job.state == store::kJobFailed || job.state == store::kJobCancelled) {
    to.state = static_cast<int>(State::kFailed);
    to.reason = std::string("the build ") +
                (job.state == store::kJobFailed ? "failed" : "was cancelled") + " (job " +
                Id(job.id) + ")";
  } else {
    return row;
  }
  return Move(State::kBuilding, to);
}

Result<store::RequestRow> Requests::Get(int64_t id) {
  FARM_ASSIGN_OR_RETURN(store::RequestRow row, deps_.requests->GetRequest(id));
  return Refresh(std::move(row));
}

Result<std::vector<store::RequestRow>> Requests::List(std::optional<State> state, int64_t before_id,
                                                      int limit) {
  FARM_ASSIGN_OR_RETURN(auto rows, deps_.requests->ListRequests(
                                       state ? static_cast<int>(*state) : 0, before_id, limit));
  for (store::RequestRow& r : rows) {
    FARM_ASSIGN_OR_RETURN(r, Refresh(std::move(r)));
  }
  return rows;
}

Result<store::RequestRow> Requests::Approve(const auth::Principal& admin, int64_t id) {
  audit::Entry entry{.action = audit::Action::kRequestApprove, .target = "request " + Id(id)};
  Status role = auth::TokenAuthority::CheckRole(admin, auth::Need::kAdmin);
  Result<store::RequestRow> out = role;
  if (role.ok()) {
    out = deps_.requests->GetRequest(id);
    const bool open = out.ok() && (out->state == static_cast<int>(State::kRequested) ||
                                   out->state == static_cast<int>(State::kRefused));
    if (out.ok() && !open) {
      out = Status::FailedPrecondition("request " + Id(id) + " is " +
                                       std::string(StateName(static_cast<State>(out->state))));
    } else if (out.ok()) {
      out = Decide(*out, /*may_build=*/true, out->first_by);
    }
  }
  if (out.ok()) entry.done = std::string(StateName(static_cast<State>(out->state)));
  if (deps_.audit != nullptr) deps_.audit->Record(admin, entry, out.status());
  return out;
}

Result<store::RequestRow> Requests::Refuse(const auth::Principal& admin, int64_t id,
                                           const std::string& reason) {
  audit::Entry entry{.action = audit::Action::kRequestRefuse, .target = "request " + Id(id)};
  Status role = auth::TokenAuthority::CheckRole(admin, auth::Need::kAdmin);
  Result<store::RequestRow> out = role;
  if (role.ok() && (reason.empty() || reason.size() > 500)) {
    out = Status::InvalidArgument("a refusal needs a reason of at most 500 bytes");
  } else if (role.ok()) {
    out = deps_.requests->GetRequest(id);
  }
  if (out.ok()) {
    const State from = static_cast<State>(out->state);
    if (IsFinal(from)) {
      out = Status::FailedPrecondition("request " + Id(id) + " is " + std::string(StateName(from)));
    } else {
      store::RequestRow to = *out;
      to.state = static_cast<int>(State::kRefused);
      to.reason = reason;
      to.decided_by = admin.name;
      out = Move(from, to);
    }
  }
  if (out.ok()) entry.done = "refused";
  if (deps_.audit != nullptr) deps_.audit->Record(admin, entry, out.status());
  return out;
}

}  // namespace farm::requests
