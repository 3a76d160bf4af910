// Who may change what (docs/security.md, "Who may change what"). Every object a client can
// change has an owner, a principal (a token's name): a build its submitter (a scheduled
// build its schedule's creator), a job and an artifact their build's, a schedule its
// creator, a recipe name the principal that first submitted it, a project (distribution)
// name the principal whose build first uploaded a wheel of it. A submitter changes only
// what it owns; an admin changes everything; viewers change nothing (their role check
// refuses them first). Every function here answers PermissionDenied naming the owner, so
// the refused principal knows whom to ask. Thread-safe: reads the store only through its
// thread-safe ports.
#ifndef FARM_DAEMON_AUTH_OWNERSHIP_H_
#define FARM_DAEMON_AUTH_OWNERSHIP_H_

#include <cstdint>
#include <string>

#include "common/status.h"
#include "daemon/auth/token_authority.h"
#include "daemon/store/ports/artifact_store.h"
#include "daemon/store/ports/build_reader.h"
#include "daemon/store/ports/recipe_name_store.h"
#include "daemon/store/ports/schedule_store.h"

namespace farm::auth {

bool IsAdmin(const Principal& who);

// Ok when `who` is an admin or is `owner`; PermissionDenied naming `what` and its owner.
Status MayChange(const Principal& who, const std::string& owner, const std::string& what);

// MayChange for the object a mutation names, its owner read from the store (NotFound for
// an unknown object, before any ownership is considered). A job or an artifact is changed
// by running its recipe again (a retry, a validation), so `who` must also still be
// allowed to build under its build's recipe name (MayUseName): a name transferred away
// takes its old builds' retries with it.
Status MayChangeBuild(store::BuildReader& builds, const Principal& who, int64_t build_id);
Status MayChangeJob(store::BuildReader& builds, store::RecipeNameStore& names, const Principal& who,
                    int64_t job_id);
Status MayChangeArtifact(store::ArtifactStore& artifacts, store::BuildReader& builds,
                         store::RecipeNameStore& names, const Principal& who, int64_t artifact_id);
Status MayChangeSchedule(store::ScheduleStore& schedules, const Principal& who,
                         int64_t schedule_id);

// Recipe names. Ok when `who` may build under `name`: nobody owns it yet, `who` does, or
// `who` is an admin. Reads only.
Status MayUseName(store::RecipeNameStore& names, const Principal& who, const std::string& name);
// Claims `name` for `who` when nobody owns it, then MayUseName's rule on the name as it
// stands (a claim that another principal won a moment earlier is refused).
Status ClaimName(store::RecipeNameStore& names, const Principal& who, const std::string& name,
                 int64_t now_ms);

// Project (distribution) names, PEP 503 normalised (wheel::NormalizeProjectName). Claims
// `project` for `submitter` when nobody owns it, then: Ok (the owner's row) when
// `submitter` owns it or is an admin; PermissionDenied naming the project and its owner
// otherwise. farmd calls it for each wheel a build uploads, before the wheel is stored.
Result<store::ProjectNameRow> ClaimProject(store::Store& store, const Principal& submitter,
                                           const std::string& project, int64_t now_ms);

}  // namespace farm::auth

#endif  // FARM_DAEMON_AUTH_OWNERSHIP_H_
