#include "daemon/coverage/events.h"

#include <algorithm>
#include <iterator>
#include <map>

#include "common/recipe/matrix.h"

namespace farm::coverage {

namespace {

void AddWheelEvents(const BuildFacts& facts, std::map<std::string, Event>* out) {
  for (const store::JobRow& job : facts.jobs) {
    if (job.kind == store::kJobValidate || job.state != store::kJobSucceeded) continue;
    auto it = facts.artifacts.find(job.id);
    if (it == facts.artifacts.end()) continue;
    farm::v1::MatrixCell cell;
    cell.ParseFromString(job.cell);
    for (const store::ArtifactRow& a : CountedWheels(job, it->second)) {
      const int state = ValidationStateOf(a);
      const bool validated = state == store::kValidationPassed;
      if (!validated && state != store::kValidationPendingHardware &&
          state != store::kValidationNotRun) {
        continue;  // failed validation: the failed build says so
      }
      const std::string kind = validated ? "wheel_validated:" : "wheel_built:";
      Event e{.kind = validated ? EventKind::kWheelValidated : EventKind::kWheelBuilt,
              .id = kind + a.sha256,
              .package = facts.build.recipe_name,
              .version = facts.recipe.version(),
              .build_id = job.build_id,
              .job_id = job.id,
              .wheel = a.filename,
              .sha256 = a.sha256,
              .cell = recipe::DescribeCell(cell),
              .cause = state == store::kValidationPendingHardware
                           ? "validation waits for a GPU it runs on"
                           : "",
              .time_ms = validated ? ValidatedAt(job, facts.jobs) : job.finished_ms,
              .release_candidate = job.release_candidate};
      if (e.release_candidate) e.torch = cell.torch();
      // The same bytes in several jobs (a reused or merged job): the first validation.
      auto [at, added] = out->try_emplace(e.id, e);
      if (!added && e.time_ms < at->second.time_ms) at->second = std::move(e);
    }
  }
}

void AddFailedBuild(const BuildFacts& facts, std::map<std::string, Event>* out) {
  if (facts.build.state != store::kBuildFailed) return;
  Event e{.kind = EventKind::kBuildFailed,
          .id = "build_failed:" + std::to_string(facts.build.id),
          .package = facts.build.recipe_name,
          .version = facts.recipe.version(),
          .build_id = facts.build.id,
          .schedule_id = facts.schedule_id,
          .time_ms = facts.build.finished_ms};
  for (const store::JobRow& job : facts.jobs) {
    if (job.state != store::kJobFailed) continue;
    farm::v1::MatrixCell cell;
    cell.ParseFromString(job.cell);
    e.job_id = job.id;
    e.cell = recipe::DescribeCell(cell);
    e.cause = job.error;
    break;
  }
  out->emplace(e.id, std::move(e));
}

void AddRefusals(const BuildFacts& facts, std::map<std::string, Event>* out) {
  for (const store::PublicationRow& p : facts.refused) {
    Event e{.kind = EventKind::kPublicationRefused,
            .id = "publication_refused:" + std::to_string(p.build_id) + ":" +
                  std::to_string(p.artifact_id) + ":" + p.target,
            .package = facts.build.recipe_name,
            .version = facts.recipe.version(),
            .build_id = p.build_id,
            .wheel = p.filename,
            .sha256 = p.sha256,
            .cause = p.error,
            .target = p.target,
            .time_ms = p.updated_ms};
    out->emplace(e.id, std::move(e));
  }
}

// The ended validation jobs that proved (or failed to prove) a wheel with another torch.
void AddProofEvents(const BuildFacts& facts, std::map<std::string, Event>* out) {
  for (const store::JobRow& v : facts.jobs) {
    if (v.kind != store::kJobValidate ||
        (v.state != store::kJobSucceeded && v.state != store::kJobFailed)) {
      continue;
    }
    auto target = std::find_if(facts.jobs.begin(), facts.jobs.end(),
                               [&v](const store::JobRow& j) { return j.id == v.target_job_id; });
    if (target == facts.jobs.end() || target->cell == v.cell) continue;
    farm::v1::MatrixCell cell;
    cell.ParseFromString(v.cell);
    farm::v1::JobNeeds needs;
    needs.ParseFromString(v.needs);
    Event e{.kind = EventKind::kTorchProof,
            .id = "torch_proof:" + std::to_string(v.id),
            .package = facts.build.recipe_name,
            .version = facts.recipe.version(),
            .build_id = v.build_id,
            .job_id = v.id,
            .cell = recipe::DescribeCell(cell),
            .cause = v.state == store::kJobFailed ? v.error : "",
            .torch = needs.new_torch().empty() ? cell.torch() : needs.new_torch(),
            .time_ms = v.finished_ms};
    if (auto it = facts.artifacts.find(target->id); it != facts.artifacts.end()) {
      for (const store::ArtifactRow& a : it->second) {
        if (a.attempt != v.target_attempt) continue;
        e.wheel = a.filename;
        e.sha256 = a.sha256;
        break;
      }
    }
    out->emplace(e.id, std::move(e));
  }
}

}  // namespace

std::string_view EventKindName(EventKind kind) {
  switch (kind) {
    case EventKind::kWheelValidated:
      return "wheel_validated";
    case EventKind::kWheelBuilt:
      return "wheel_built";
    case EventKind::kPublicationRefused:
      return "publication_refused";
    case EventKind::kTorchProof:
      return "torch_proof";
    case EventKind::kRequestBuilt:
      return "request_built";
    case EventKind::kBuildFailed:
      break;
  }
  return "build_failed";
}

std::optional<EventKind> ParseEventKind(std::string_view name) {
  for (EventKind k :
       {EventKind::kWheelValidated, EventKind::kBuildFailed, EventKind::kWheelBuilt,
        EventKind::kPublicationRefused, EventKind::kTorchProof, EventKind::kRequestBuilt}) {
    if (EventKindName(k) == name) return k;
  }
  return std::nullopt;
}

std::vector<Event> EventsOf(const std::vector<BuildFacts>& builds, size_t limit) {
  std::map<std::string, Event> by_id;
  for (const BuildFacts& facts : builds) {
    AddWheelEvents(facts, &by_id);
    AddFailedBuild(facts, &by_id);
    AddRefusals(facts, &by_id);
    AddProofEvents(facts, &by_id);
  }
  std::vector<Event> out;
  out.reserve(by_id.size());
  for (auto& [id, e] : by_id) out.push_back(std::move(e));
  std::sort(out.begin(), out.end(), [](const Event& a, const Event& b) {
    return a.time_ms != b.time_ms ? a.time_ms > b.time_ms : a.id < b.id;
  });
  if (out.size() > limit) out.resize(limit);
  return out;
}

std::vector<Event> EventsWithRequests(const std::vector<BuildFacts>& builds,
                                      const std::vector<store::RequestRow>& requests,
                                      size_t limit) {
  std::vector<Event> out = EventsOf(builds, SIZE_MAX);
  std::map<int64_t, const Event*> wheel_of_job;  // a validated wheel wins over a built one
  for (const Event& e : out) {
    const bool wheel = e.kind == EventKind::kWheelValidated || e.kind == EventKind::kWheelBuilt;
    auto [at, added] =
        wheel ? wheel_of_job.try_emplace(e.job_id, &e) : std::make_pair(wheel_of_job.end(), false);
    if (wheel && !added && e.kind == EventKind::kWheelValidated) at->second = &e;
  }
  std::vector<Event> more;
  for (const store::RequestRow& r : requests) {
    auto it = r.job_id > 0 ? wheel_of_job.find(r.job_id) : wheel_of_job.end();
    if (it == wheel_of_job.end()) continue;
    Event e = *it->second;
    e.kind = EventKind::kRequestBuilt;
    e.id = "request_built:" + std::to_string(r.id);
    e.package = r.package;
    e.cause =
        "request " + std::to_string(r.id) + ", asked " + std::to_string(r.filings) + " time(s)";
    more.push_back(std::move(e));
  }
  out.insert(out.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  std::sort(out.begin(), out.end(), [](const Event& a, const Event& b) {
    return a.time_ms != b.time_ms ? a.time_ms > b.time_ms : a.id < b.id;
  });
  if (out.size() > limit) out.resize(limit);
  return out;
}

std::string EventTitle(const Event& e) {
  std::string head = e.package + (e.version.empty() ? "" : " " + e.version) + ": ";
  // "..., a release candidate build for torch 2.12 (its final release's build replaces it)"
  const std::string candidate = e.release_candidate
                                    ? ", a release candidate build for torch " + e.torch +
                                          " (its final release's build replaces it)"
                                    : "";
  if (e.kind == EventKind::kWheelValidated) {
    return head + e.wheel + " validated (job " + std::to_string(e.job_id) + ")" + candidate;
  }
  if (e.kind == EventKind::kPublicationRefused) {
    return head + e.wheel + " too large for " +
           (e.target == "github" ? "GitHub Releases" : "the Hugging Face Hub") + " (build " +
           std::to_string(e.build_id) + ")";
  }
  if (e.kind == EventKind::kTorchProof) {
    return head + e.wheel + (e.cause.empty() ? " validated on torch " : " failed on torch ") +
           e.torch + " without a rebuild (job " + std::to_string(e.job_id) + ")" +
           (e.cause.empty() ? "" : ": " + e.cause);
  }
  if (e.kind == EventKind::kRequestBuilt) {
    return head + "the requested wheel " + e.wheel + " is ready (job " + std::to_string(e.job_id) +
           "; " + e.cause + ")";
  }
  if (e.kind == EventKind::kWheelBuilt) {
    return head + e.wheel + " built (job " + std::to_string(e.job_id) + ")" + candidate +
           (e.cause.empty() ? "" : "; " + e.cause);
  }
  return head + "build " + std::to_string(e.build_id) + " failed" +
         (e.schedule_id > 0
              ? " (release-day failure: schedule " + std::to_string(e.schedule_id) + ")"
              : "");
}

}  // namespace farm::coverage
