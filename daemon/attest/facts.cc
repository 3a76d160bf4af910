#include "daemon/attest/facts.h"

#include "common/lock/env_lock.h"
#include "common/sha256.h"
#include "common/version.h"

namespace farm::attest {

using provenance::Resource;

namespace {

// At most this many log lines are read per page while hashing a log.
constexpr int kLogPage = 5000;
constexpr int kMaxLogPages = 100000;

template <typename Msg>
Msg Parse(const std::string& blob) {
  Msg m;
  (void)m.ParseFromString(blob);
  return m;
}

provenance::CellFacts CellOf(const farm::v1::MatrixCell& c) {
  return {.python = c.python(),
          .torch = c.torch(),
          .cuda = c.cuda(),
          .arch_list = c.arch_list(),
          .platform = c.platform()};
}

Resource SourceOf(const farm::v1::Recipe& recipe, const store::BuildRow& build) {
  const farm::v1::Source& s = recipe.source();
  if (s.has_git()) {
    return {.name = "git source",
            .uri = "git+" + s.git().url(),
            .git_commit = s.git().commit(),
            .annotations = {{"ref", s.git().ref()}}};
  }
  std::string sha = s.has_archive() ? s.archive().sha256() : build.source_sha256;
  return {.name = "source archive",
          .sha256 = sha,
          .annotations = {{"origin", s.has_archive() ? s.archive().origin() : ""},
                          {"subdirectory", recipe.subdirectory()}}};
}

// The Python, torch and CUDA toolkit of the cell, as the worker's probe found them (a
// provisioned cell's packages are listed from its lock, AddLockedPackages).
std::vector<Resource> EnvironmentOf(const farm::v1::MatrixCell& cell,
                                    const farm::v1::Capabilities& caps) {
  std::vector<Resource> out;
  const farm::v1::PythonInterpreter* python = nullptr;
  for (const auto& p : caps.pythons()) {
    if (p.version() == cell.python()) python = &p;
  }
  out.push_back({.name = "python",
                 .annotations = {{"version", cell.python()},
                                 {"path", python != nullptr ? python->path() : ""}}});
  if (!cell.torch().empty()) {
    out.push_back(
        {.name = "torch",
         .annotations = {{"version", cell.torch()},
                         {"hostTorch", python != nullptr ? python->torch_version() : ""},
                         {"hostTorchCuda", python != nullptr ? python->torch_cuda() : ""}}});
  }
  for (const auto& t : caps.toolkits()) {
    if (t.version() != cell.cuda()) continue;
    out.push_back(
        {.name = "cuda-toolkit", .annotations = {{"version", t.version()}, {"path", t.path()}}});
    break;
  }
  return out;
}

// A provisioned job's environment: the lock it installed, and every wheel in it with its
// digest (the lock's own sha256 names the whole set).
Status AddLockedPackages(store::Store& store, const store::JobRow& job,
                         std::vector<Resource>* environment) {
  const std::string digest = Parse<farm::v1::JobNeeds>(job.needs).lock_digest();
  if (digest.empty()) return Status::Ok();
  FARM_ASSIGN_OR_RETURN(std::optional<store::LockRow> row, store.GetLock(digest));
  if (!row) return Status::DataLoss("the lock " + digest + " is not in the store");
  FARM_ASSIGN_OR_RETURN(lock::EnvLock locked, lock::ParseToml(row->text));
  environment->push_back({.name = "pylock.toml",
                          .sha256 = digest,
                          .annotations = {{"packages", std::to_string(locked.packages.size())}}});
  for (const lock::LockedPackage& p : locked.packages) {
    environment->push_back({.name = p.filename,
                            .uri = p.url,
                            .sha256 = p.sha256,
                            .annotations = {{"package", p.name}, {"version", p.version}}});
  }
  return Status::Ok();
}

// sha256 over the attempt's stored lines, each text + "\n", and how many there were.
Result<std::pair<std::string, int64_t>> LogDigest(store::Store& store, int64_t job_id,
                                                  int attempt) {
  Sha256 h;
  int64_t after = 0, lines = 0;
  for (int page = 0; page < kMaxLogPages; ++page) {
    FARM_ASSIGN_OR_RETURN(auto rows, store.GetLogLines(job_id, attempt, after, kLogPage));
    for (const auto& l : rows) {
      h.Update(l.text);
      h.Update("\n");
      after = l.seq;
      ++lines;
    }
    if (static_cast<int>(rows.size()) < kLogPage) break;
  }
  return std::pair{h.HexDigest(), lines};
}

}  // namespace

provenance::WorkerFacts WorkerFactsOf(store::Store& store, const std::string& worker_id) {
  provenance::WorkerFacts w{.id = worker_id};
  auto row = store.GetWorker(worker_id);
  if (!row.ok()) return w;
  auto caps = Parse<farm::v1::Capabilities>(row->capabilities);
  w.name = row->name;
  w.hostname = caps.hostname();
  w.platform = caps.platform();
  w.driver_version = caps.driver_version();
  w.driver_cuda_version = caps.driver_cuda_version();
  for (const auto& g : caps.gpus()) {
    w.gpus.push_back(
        {.name = g.name(),
         .compute_capability = std::to_string(g.cc_major()) + "." + std::to_string(g.cc_minor()),
         .uuid = g.uuid()});
  }
  for (const auto& t : caps.toolkits()) w.toolkits.push_back(t.version() + " at " + t.path());
  return w;
}

Result<provenance::BuildFacts> BuildFactsOf(store::Store& store, const store::ArtifactRow& artifact,
                                            const std::string& farm_id, int64_t now_ms) {
  FARM_ASSIGN_OR_RETURN(store::JobRow job, store.GetJob(artifact.job_id));
  FARM_ASSIGN_OR_RETURN(store::BuildRow build, store.GetBuild(job.build_id));
  auto recipe = Parse<farm::v1::Recipe>(build.recipe);
  auto cell = Parse<farm::v1::MatrixCell>(job.cell);
  provenance::BuildFacts f{.wheel = {artifact.filename, artifact.sha256},
                           .farm_id = farm_id,
                           .farmd_version = FarmVersion(),
                           .worker = WorkerFactsOf(store, job.worker_id),
                           .recipe_name = recipe.name(),
                           .recipe_version = recipe.version(),
                           .recipe_sha256 = Sha256Hex(recipe.yaml()),
                           .cell = CellOf(cell),
                           .source = SourceOf(recipe, build),
                           .build_id = build.id,
                           .job_id = job.id,
                           .attempt = artifact.attempt,
                           .finished_ms = now_ms};
  for (const auto& p : recipe.patches()) {
    f.patches.push_back({.name = "patch " + p.name(), .sha256 = Sha256Hex(p.content())});
  }
  if (!recipe.validation().script_content().empty()) {
    f.validation_script_sha256 = Sha256Hex(recipe.validation().script_content());
  }
  FARM_ASSIGN_OR_RETURN(auto inputs, store.ListJobInputs(job.id));
  for (const auto& in : inputs) {
    f.consumed_wheels.push_back({.name = in.artifact.filename,
                                 .sha256 = in.artifact.sha256,
                                 .annotations = {{"job", std::to_string(in.required_job_id)}}});
  }
  auto worker = store.GetWorker(job.worker_id);
  f.environment =
      EnvironmentOf(cell, worker.ok() ? Parse<farm::v1::Capabilities>(worker->capabilities)
                                      : farm::v1::Capabilities());
  FARM_RETURN_IF_ERROR(AddLockedPackages(store, job, &f.environment));
  FARM_ASSIGN_OR_RETURN(auto attempts, store.ListAttempts(job.id));
  for (const auto& a : attempts) {
    if (a.number == artifact.attempt) f.started_ms = a.started_ms;
  }
  FARM_ASSIGN_OR_RETURN(auto log, LogDigest(store, job.id, artifact.attempt));
  f.log_sha256 = log.first;
  f.log_lines = log.second;
  return f;
}

provenance::ValidationFacts ValidationFactsOf(store::Store& store, const provenance::Subject& wheel,
                                              const farm::v1::ValidationReport& report,
                                              const store::JobRow& job, int attempt,
                                              const std::string& worker_id,
                                              const std::string& farm_id, int64_t now_ms) {
  provenance::ValidationFacts f{
      .wheel = wheel,
      .validated = wheel,
      .farm_id = farm_id,
      .verdict = report.state() == farm::v1::VALIDATION_PASSED ? "passed" : "failed",
      .gpu_name = report.gpu_name(),
      .compute_capability = report.compute_capability(),
      .message = report.message(),
      .worker = WorkerFactsOf(store, worker_id),
      .job_id = job.id,
      .attempt = attempt,
      .finished_ms = now_ms};
  for (const auto& c : report.cases()) {
    bool v1 = c.throughput() == 0 && c.tops() != 0;  // schema v1 reports carry TOPS only
    f.cases.push_back({.name = c.name(),
                       .passed = c.passed(),
                       .cosine = c.cosine(),
                       .relative_l1 = c.relative_l1(),
                       .rmse = c.rmse(),
                       .throughput = v1 ? c.tops() : c.throughput(),
                       .baseline_throughput = v1 ? c.baseline_tops() : c.baseline_throughput(),
                       .throughput_unit = v1 ? "TOPS" : c.throughput_unit(),
                       .baseline = c.baseline()});
  }
  return f;
}

}  // namespace farm::attest
