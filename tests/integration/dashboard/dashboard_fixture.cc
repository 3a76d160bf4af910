// dashboard_fixture: starts the dashboard over a store it fills itself, for the browser
// test, the package index test and the benchmark (farmd does not serve HTTP yet).
//
//   dashboard_fixture --data-dir DIR --ready-file FILE [--web-root DIR] [--demo]
//       [--line-ms MS] [--lines N] [--fill-builds N --jobs-per-build N] [--workers N]
//       [--wheel FILE,CUDA,TORCH,STATE[,SASS]]...   (STATE: passed, pending, failed;
//                                                SASS: its one image, e.g. sm_90)
//
// --demo creates a 2x2 build whose first job logs a line every --line-ms and then succeeds,
// a finished build with a failure, and a build for an RTX 5090 (12.0a) whose wheel waits
// for hardware with its validation job pending (no worker has a GPU of cc 12.0).
// --workers registers N workers with CUDA 13.0 (the filled builds' CUDA 12.8 cells are then
// unplaceable), so pages that explain waiting jobs do real placement work.
// Writes "127.0.0.1:PORT" to the ready file and serves until SIGTERM or SIGINT.
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "common/arch.h"
#include "common/clock.h"
#include "common/fs.h"
#include "common/sha256.h"
#include "daemon/attest/attestor.h"
#include "daemon/http/server/dashboard.h"
#include "farm/v1/types.pb.h"

namespace farm {
namespace {

struct Args {
  std::string data_dir, ready_file, web_root;
  bool demo = false;
  int line_ms = 300, lines = 20, fill_builds = 0, jobs_per_build = 10, workers = 0;
  int finish_every = 0;
  std::vector<std::string> wheels;
};

std::string Cell(const std::string& py, const std::string& torch, const std::string& cuda,
                 const std::string& arch) {
  farm::v1::MatrixCell c;
  c.set_python(py), c.set_torch(torch), c.set_cuda(cuda), c.set_arch_list(arch);
  c.set_platform("linux_x86_64");
  return c.SerializeAsString();
}

store::BuildRow NewBuild(const std::string& name, int64_t now) {
  store::BuildRow b;
  farm::v1::Recipe r;
  r.set_name(name), r.set_version("0.1.0"), r.set_yaml("name: " + name + "\nversion: 0.1.0\n");
  b.recipe_name = name, b.recipe = r.SerializeAsString(), b.submitted_by = "fixture";
  b.created_ms = now;
  return b;
}

Status AddWorkers(store::Store* st, int64_t now) {
  const store::WorkerState states[] = {store::WorkerState::kBusy, store::WorkerState::kIdle,
                                       store::WorkerState::kDraining};
  for (int i = 0; i < 3; ++i) {
    farm::v1::Capabilities caps;
    caps.set_hostname("gpu-host-" + std::to_string(i + 1));
    caps.set_platform("linux_x86_64");
    auto* g = caps.add_gpus();
    g->set_name(i == 2 ? "NVIDIA GB10" : "NVIDIA H100"), g->set_cc_major(i == 2 ? 12 : 9);
    g->set_cc_minor(i == 2 ? 1 : 0);
    caps.add_toolkits()->set_version("13.0");
    auto* py = caps.add_pythons();
    py->set_version("3.12"), py->set_torch_version("2.9.0");
    FARM_RETURN_IF_ERROR(st->UpsertWorker(
        store::WorkerRow{"w" + std::to_string(i + 1), "worker-" + std::to_string(i + 1),
                         caps.SerializeAsString(), states[i], now, now}));
  }
  return Status::Ok();
}

// `n` idle workers "bench-<i>" with an H100 and CUDA 13.0, for the benchmark.
Status AddBenchWorkers(store::Store* st, int n, int64_t now) {
  for (int i = 0; i < n; ++i) {
    farm::v1::Capabilities caps;
    caps.set_hostname("bench-host-" + std::to_string(i)), caps.set_platform("linux_x86_64");
    auto* g = caps.add_gpus();
    g->set_name("NVIDIA H100"), g->set_cc_major(9), g->set_cc_minor(0);
    caps.add_toolkits()->set_version("13.0");
    auto* py = caps.add_pythons();
    py->set_version(i % 2 ? "3.11" : "3.12"), py->set_torch_version("2.8.0");
    FARM_RETURN_IF_ERROR(st->UpsertWorker(
        store::WorkerRow{"wb" + std::to_string(i), "bench-" + std::to_string(i),
                         caps.SerializeAsString(), store::WorkerState::kIdle, now, now}));
  }
  return Status::Ok();
}

// Runs job `id` on worker w1: `lines` log lines, then an artifact and success.
void RunDemoJob(store::Store* st, const Args& a) {
  const Clock& clock = RealClock();
  auto job = st->AcquireJob("w1", clock.NowUnixMs(), 3'600'000, nullptr);
  if (!job.ok() || !*job) return;
  int64_t id = (*job)->id;
  const char* colours[] = {"\x1b[32m", "\x1b[33m", "\x1b[1;34m", ""};
  for (int i = 1; i <= a.lines; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(a.line_ms));
    std::string text = std::string(colours[i % 4]) + "[" + std::to_string(i) + "/" +
                       std::to_string(a.lines) + "] nvcc -gencode arch=compute_90a,code=sm_90a" +
                       (colours[i % 4][0] ? "\x1b[0m" : "");
    (void)st->AppendLogLines(id, 1, {store::LogLineRow{i, 1, text, clock.NowUnixMs()}});
    // As the worker's heartbeat reports it: the page draws a progress bar.
    (void)st->RecordProgress({id, 1, "w1", i, a.lines, int64_t{96} << 20});
  }
  farm::v1::ValidationReport v;
  v.set_state(farm::v1::VALIDATION_PASSED), v.set_gpu_name("NVIDIA H100");
  auto* c = v.add_cases();
  c->set_name("causal-bf16"), c->set_cosine(0.9995), c->set_passed(true);
  c->set_tops(718.4), c->set_baseline_tops(589.0);
  farm::v1::ArchManifest m;
  m.add_runs_on("9.0");
  auto* img = m.add_images();
  img->set_module("attn_example/_C.so"), img->set_kind("sass"), img->set_arch("sm_90a");
  (void)st->InsertArtifact(store::ArtifactRow{
      0, id, 1, "attn_example-0.1.0-cp311-cp311-linux_x86_64.whl", Sha256Hex("demo"), 4,
      m.SerializeAsString(), v.SerializeAsString(), clock.NowUnixMs()});
  store::CompletionReport r;
  r.job_id = id, r.attempt = 1, r.worker_id = "w1";
  (void)st->CompleteAttempt(r, clock.NowUnixMs());
}

// A build of one 12.0a cell built on w2 (no GPU of cc 12.0), its wheel pending hardware,
// and the validation job that waits for an RTX 5090.
Status AddPendingValidation(store::Store* st, int64_t now) {
  auto build = NewBuild("sageattention", now - 1'800'000);
  std::vector<store::JobRow> jobs(1);
  jobs[0].cell = Cell("3.12", "2.9", "13.0", "12.0a"), jobs[0].created_ms = build.created_ms;
  FARM_RETURN_IF_ERROR(st->CreateBuild(&build, &jobs));
  FARM_ASSIGN_OR_RETURN(
      auto job, st->AcquireJob("w2", now - 1'700'000, 3'600'000, [&](const store::JobRow& j) {
        return j.id == jobs[0].id ? "" : "other";
      }));
  if (!job) return Status::Internal("acquire failed");
  farm::v1::ValidationReport v;
  v.set_state(farm::v1::VALIDATION_PENDING_HARDWARE);
  v.set_message("no GPU of cc 12.0 on this worker");
  farm::v1::ArchManifest m;
  m.add_runs_on("12.0");
  auto* img = m.add_images();
  img->set_module("sageattention/_qattn_sm120.so"), img->set_kind("sass"), img->set_arch("sm_120a");
  FARM_RETURN_IF_ERROR(
      st->InsertArtifact(store::ArtifactRow{0, jobs[0].id, 1,
                                            "sageattention-2.2.0-cp312-cp312-linux_x86_64.whl",
                                            Sha256Hex("rtx"), 3, m.SerializeAsString(),
                                            v.SerializeAsString(), now - 1'600'000})
          .status());
  store::CompletionReport r;
  r.job_id = jobs[0].id, r.attempt = 1, r.worker_id = "w2";
  FARM_RETURN_IF_ERROR(st->CompleteAttempt(r, now - 1'600'000).status());
  farm::v1::JobNeeds needs;
  needs.add_gpu_ccs("12.0");
  return st
      ->QueueValidationJob({.build_id = build.id,
                            .cell = jobs[0].cell,
                            .created_ms = now - 1'600'000,
                            .kind = store::kJobValidate,
                            .target_job_id = jobs[0].id,
                            .target_attempt = 1,
                            .needs = needs.SerializeAsString()})
      .status();
}

Status AddDemo(store::Store* st, int64_t now) {
  FARM_RETURN_IF_ERROR(AddWorkers(st, now));
  auto build = NewBuild("attn-example", now - 60'000);
  std::vector<store::JobRow> jobs;
  for (const char* cuda : {"13.0", "12.8"}) {
    for (const char* arch : {"9.0a", "9.0a;12.0a"}) {
      store::JobRow j;
      j.cell = Cell("3.11", "2.8", cuda, arch), j.created_ms = now - 60'000;
      jobs.push_back(j);
    }
  }
  FARM_RETURN_IF_ERROR(st->CreateBuild(&build, &jobs));
  // A finished build of another recipe gives the chart a second series and a failure.
  auto old = NewBuild("flash-kernels", now - 3'600'000);
  std::vector<store::JobRow> old_jobs(3);
  for (auto& j : old_jobs)
    j.cell = Cell("3.12", "", "13.0", "12.1a"), j.created_ms = now - 3'600'000;
  FARM_RETURN_IF_ERROR(st->CreateBuild(&old, &old_jobs));
  for (int i = 0; i < 3; ++i) {
    auto job =
        st->AcquireJob("w2", now - 3'500'000 + i * 600'000, 3'600'000,
                       [&](const store::JobRow& j) { return j.build_id == old.id ? "" : "other"; });
    if (!job.ok() || !*job) return Status::Internal("acquire failed");
    store::CompletionReport r;
    r.job_id = (*job)->id, r.attempt = 1, r.worker_id = "w2";
    if (i == 1) r.cause = store::kCauseBuildFailed, r.exit_code = 2, r.detail = "nvcc failed";
    FARM_RETURN_IF_ERROR(st->CompleteAttempt(r, now - 3'400'000 + i * 700'000).status());
  }
  return AddPendingValidation(st, now);
}

// Runs every job of `build` on a bench worker: leased `wait_ms` after creation, ended
// `run_ms` later, every fifth job failed. Gives the histograms and the failure lists rows.
Status FinishBuild(store::Store* st, const std::vector<store::JobRow>& jobs, int64_t wait_ms,
                   int64_t run_ms) {
  std::vector<store::LeaseRequest> requests;
  for (const auto& j : jobs) requests.push_back({j.id, "w-bench"});
  int64_t started = jobs.front().created_ms + wait_ms;
  FARM_RETURN_IF_ERROR(st->LeaseJobs(requests, started, 3'600'000).status());
  for (size_t i = 0; i < jobs.size(); ++i) {
    store::CompletionReport r;
    r.job_id = jobs[i].id, r.attempt = 1, r.worker_id = "w-bench";
    if (i % 5 == 4) r.cause = store::kCauseBuildFailed, r.exit_code = 1, r.detail = "nvcc failed";
    FARM_RETURN_IF_ERROR(st->CompleteAttempt(r, started + run_ms).status());
  }
  return Status::Ok();
}

// Bulk rows for the benchmark: builds of `per` jobs, pending; with finish_every > 0 the
// jobs of every finish_every-th build ran and ended (FinishBuild).
Status Fill(store::Store* st, int builds, int per, int finish_every, int64_t now) {
  for (int b = 0; b < builds; ++b) {
    auto build = NewBuild(b % 2 ? "attn-example" : "flash-kernels", now - (builds - b) * 1000);
    std::vector<store::JobRow> jobs(static_cast<size_t>(per));
    for (int i = 0; i < per; ++i) {
      jobs[static_cast<size_t>(i)].cell = Cell(
          i % 2 ? "3.11" : "3.12", "2.8", i % 3 ? "13.0" : "12.8", "9.0a;" + std::to_string(i));
      jobs[static_cast<size_t>(i)].created_ms = build.created_ms;
    }
    FARM_RETURN_IF_ERROR(st->CreateBuild(&build, &jobs));
    if (finish_every > 0 && b % finish_every == 0) {
      FARM_RETURN_IF_ERROR(FinishBuild(st, jobs, 1'000 * (b % 700), 60'000 * (1 + b % 120)));
    }
  }
  return Status::Ok();
}

// Registers a succeeded job whose artifact is the wheel at `spec`'s path.
// Each wheel is signed as farmd signs an uploaded one, so the install script can verify it.
Status AddWheel(store::Store* st, store::BlobStore* blobs, attest::Attestor* attestor,
                const std::string& spec, int64_t now) {
  std::vector<std::string> f;
  size_t pos = 0;
  for (size_t c; (c = spec.find(',', pos)) != std::string::npos; pos = c + 1)
    f.push_back(spec.substr(pos, c - pos));
  f.push_back(spec.substr(pos));
  if (f.size() != 4 && f.size() != 5) {
    return Status::InvalidArgument("--wheel FILE,CUDA,TORCH,STATE[,SASS]");
  }
  FARM_ASSIGN_OR_RETURN(std::string data, fs::ReadFile(f[0]));
  std::string sha = Sha256Hex(data);
  FARM_ASSIGN_OR_RETURN(auto w, blobs->BeginWrite(static_cast<int64_t>(data.size()), sha));
  FARM_RETURN_IF_ERROR(w->Append(data));
  FARM_RETURN_IF_ERROR(w->Commit());
  auto build = NewBuild("attn-example", now);
  std::vector<store::JobRow> jobs(1);
  jobs[0].cell = Cell("3.11", f[2], f[1], "9.0a"), jobs[0].created_ms = now;
  FARM_RETURN_IF_ERROR(st->CreateBuild(&build, &jobs));
  auto job = st->AcquireJob("w-wheels", now, 60'000, [&](const store::JobRow& j) {
    return j.id == jobs[0].id ? "" : "other";
  });
  if (!job.ok() || !*job) return Status::Internal("acquire failed");
  farm::v1::ValidationReport v;
  v.set_state(f[3] == "passed"    ? farm::v1::VALIDATION_PASSED
              : f[3] == "pending" ? farm::v1::VALIDATION_PENDING_HARDWARE
                                  : farm::v1::VALIDATION_FAILED);
  std::string name = f[0].substr(f[0].rfind('/') + 1);
  std::string manifest;
  if (f.size() == 5) {  // one SASS image, e.g. sm_90: the wheel loads on that GPU family only
    farm::v1::ArchManifest m;
    auto* img = m.add_images();
    img->set_module("attn_example/_C.so"), img->set_kind("sass"), img->set_arch(f[4]);
    FARM_ASSIGN_OR_RETURN(arch::Image image, arch::ParseImage(f[4]));
    for (const arch::Version& cc : arch::RunsOn(std::vector<arch::Image>{image})) {
      m.add_runs_on(cc.ToString());
    }
    manifest = m.SerializeAsString();
  }
  FARM_ASSIGN_OR_RETURN(store::ArtifactRow stored,
                        st->InsertArtifact(store::ArtifactRow{
                            0, jobs[0].id, 1, name, sha, static_cast<int64_t>(data.size()),
                            manifest, v.SerializeAsString(), now}));
  FARM_RETURN_IF_ERROR(attestor->AttestBuild(stored));
  store::CompletionReport r;
  r.job_id = jobs[0].id, r.attempt = 1, r.worker_id = "w-wheels";
  return st->CompleteAttempt(r, now).status();
}

Result<Args> ParseArgs(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (k == "--data-dir")
      a.data_dir = next();
    else if (k == "--ready-file")
      a.ready_file = next();
    else if (k == "--web-root")
      a.web_root = next();
    else if (k == "--demo")
      a.demo = true;
    else if (k == "--line-ms")
      a.line_ms = std::stoi(next());
    else if (k == "--lines")
      a.lines = std::stoi(next());
    else if (k == "--fill-builds")
      a.fill_builds = std::stoi(next());
    else if (k == "--jobs-per-build")
      a.jobs_per_build = std::stoi(next());
    else if (k == "--workers")
      a.workers = std::stoi(next());
    else if (k == "--finish-every")
      a.finish_every = std::stoi(next());
    else if (k == "--wheel")
      a.wheels.push_back(next());
    else
      return Status::InvalidArgument("unknown flag " + k);
  }
  if (a.data_dir.empty() || a.ready_file.empty()) {
    return Status::InvalidArgument("--data-dir and --ready-file are required");
  }
  return a;
}

Status Main(const Args& a) {
  FARM_RETURN_IF_ERROR(fs::MakeDirs(a.data_dir));
  FARM_ASSIGN_OR_RETURN(auto st, store::OpenSqliteStore(a.data_dir + "/farm.db"));
  FARM_ASSIGN_OR_RETURN(auto blobs, store::BlobStore::Open(a.data_dir + "/blobs"));
  auth::TokenAuthority authority(st.get(), &RealClock());
  int64_t now = RealClock().NowUnixMs();
  FARM_ASSIGN_OR_RETURN(std::string submit, authority.Create("submitter", "fixture"));
  FARM_RETURN_IF_ERROR(fs::WriteFileAtomic(a.data_dir + "/submitter.token", submit + "\n", 0600));
  if (a.demo) FARM_RETURN_IF_ERROR(AddDemo(st.get(), now));
  FARM_RETURN_IF_ERROR(Fill(st.get(), a.fill_builds, a.jobs_per_build, a.finish_every, now));
  FARM_RETURN_IF_ERROR(AddBenchWorkers(st.get(), a.workers, now));
  FARM_ASSIGN_OR_RETURN(auto keys,
                        provenance::KeyRing::Open(a.data_dir + "/provenance", RealClock()));
  attest::Attestor attestor(st.get(), keys.get(), &RealClock());
  for (const auto& w : a.wheels) {
    FARM_RETURN_IF_ERROR(AddWheel(st.get(), blobs.get(), &attestor, w, now));
  }
  http::DashboardOptions options;
  options.web_root = a.web_root;
  http::DashboardDeps deps{st.get(), blobs.get(), &authority, &RealClock()};
  deps.attestor = &attestor;
  FARM_ASSIGN_OR_RETURN(auto dashboard, http::Dashboard::Start(options, deps));
  FARM_RETURN_IF_ERROR(fs::WriteFileAtomic(a.ready_file, dashboard->address() + "\n"));
  std::cout << "serving on http://" << dashboard->address() << "/" << std::endl;
  std::thread demo;
  if (a.demo) demo = std::thread(RunDemoJob, st.get(), a);
  sigset_t set;
  sigemptyset(&set), sigaddset(&set, SIGTERM), sigaddset(&set, SIGINT);
  int sig = 0;
  sigwait(&set, &sig);
  if (demo.joinable()) demo.join();
  dashboard->Shutdown();
  return Status::Ok();
}

}  // namespace
}  // namespace farm

int main(int argc, char** argv) {
  // Block the stop signals in every thread so sigwait receives them.
  sigset_t set;
  sigemptyset(&set), sigaddset(&set, SIGTERM), sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  try {
    auto args = farm::ParseArgs(argc, argv);
    farm::Status s = args.ok() ? farm::Main(args.value()) : args.status();
    if (!s.ok()) {
      std::cerr << "dashboard_fixture: " << s.ToString() << std::endl;
      return 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "dashboard_fixture: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
