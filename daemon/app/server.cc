#include "daemon/app/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "common/fs.h"
#include "common/httpc/curl_http_client.h"
#include "common/lock/pip_resolver.h"
#include "common/log.h"
#include "common/sandbox/sandbox.h"
#include "daemon/api/client/client_service.h"
#include "daemon/api/worker/worker_service.h"
#include "daemon/app/lock_routes.h"
#include "daemon/attest/attestor.h"
#include "daemon/builds/build_key.h"
#include "daemon/builds/completion.h"
#include "daemon/builds/control.h"
#include "daemon/builds/heartbeat.h"
#include "daemon/builds/new_torch.h"
#include "daemon/builds/recipe_cache.h"
#include "daemon/builds/schedule_control.h"
#include "daemon/builds/submit.h"
#include "daemon/cron/runner.h"
#include "daemon/cron/torch_follow.h"
#include "daemon/hosts/host_manager.h"
#include "daemon/http/server/dashboard.h"
#include "daemon/locks/env_locker.h"
#include "daemon/mirror/internal_access.h"
#include "daemon/publish/publishing_service.h"
#include "daemon/sched/dispatcher.h"
#include "daemon/sched/revalidation.h"
#include "daemon/sched/sweeper.h"
#include "daemon/store/sql_store/postgres.h"

namespace farm::app {

using api::ClientService;
using api::ServiceContext;
using api::TokenAuthority;
using api::WorkerService;

struct FarmServer::Impl {
  ServerOptions options;
  std::unique_ptr<store::Store> store;
  std::unique_ptr<store::BlobStore> blobs;
  std::unique_ptr<TokenAuthority> auth;
  std::unique_ptr<quota::QuotaKeeper> quotas;
  std::unique_ptr<provenance::KeyRing> keys;
  std::unique_ptr<attest::Attestor> attestor;
  std::unique_ptr<audit::AuditLog> audit;
  std::atomic<bool> shutting_down{false};
  ServiceContext ctx;
  RealProcessRunner processes;
  std::unique_ptr<cron::GitSourceResolver> resolver;
  std::unique_ptr<upstream::Fetcher> upstream_fetcher;
  // The use cases, and the dispatcher, which outlives the worker service whose polls wait
  // in it.
  std::unique_ptr<builds::Control> control;
  std::unique_ptr<builds::Submitter> submitter;
  std::unique_ptr<requests::Requests> requests;
  std::unique_ptr<builds::RecipeCache> recipes;
  std::unique_ptr<builds::Heartbeats> heartbeats;
  std::unique_ptr<builds::Completer> completer;
  sched::PeerCache peers;
  std::unique_ptr<sched::Dispatcher> dispatcher;
  std::unique_ptr<ClientService> client_service;
  std::unique_ptr<WorkerService> worker_service;
  std::unique_ptr<grpc::Server> server;
  // The pull-through cache's own fetcher (redirects kept within an upstream's host), whose
  // transfers stop when farmd does.
  std::shared_ptr<std::atomic<bool>> mirror_cancelled = std::make_shared<std::atomic<bool>>(false);
  std::unique_ptr<upstream::Fetcher> mirror_fetcher;
  std::unique_ptr<mirror::PullThroughCache> mirror;  // outlives the dashboard serving it
  // The secret farmd's own processes use /upstream/ with (mirror/internal_access.h).
  std::shared_ptr<const mirror::InternalAccess> internal;
  std::unique_ptr<http::Dashboard> dashboard;
  RealProcessRunner host_processes;
  std::unique_ptr<hosts::HostManager> hosts;
  std::unique_ptr<cron::BuildSubmitter> schedule_submitter;
  std::unique_ptr<cron::UpstreamWatchPoller> poller;
  std::unique_ptr<cron::ScheduleRunner> schedules;
  std::unique_ptr<builds::ScheduleControl> schedule_control;
  std::unique_ptr<builds::NewTorchProver> prover;
  std::unique_ptr<publish::PublishingService> publishing;
  std::unique_ptr<httpc::HttpClient> webhook_http;
  std::unique_ptr<notify::Notifier> notifier;
  std::unique_ptr<sched::Revalidator> revalidator;
  std::unique_ptr<sched::Sweeper> sweeper;
  RealProcessRunner resolver_processes;
  std::unique_ptr<lock::PipResolver> pip_resolver;
  std::unique_ptr<locks::EnvLocker> locker;
  std::string resolver_tmp;  // the resolver's folder outside a sandbox, removed at Shutdown
  std::thread index_check;   // CheckUpstreamIndexes, joined at Shutdown
  std::string address;
  std::mutex mu;
  bool stopped = false;

  // Start's steps, in order. Opens the store and the blob store and makes what every
  // part shares (tokens, keys, audit, quotas, git and upstream access).
  Status OpenStores(const ServerOptions& o);
  // The use cases (daemon/builds/) and the dispatcher, handed to both front ends.
  void MakeUseCases(const ServerOptions& o);
  // The schedule runner and its use cases, the host manager and the gRPC services.
  void MakeServices(const ServerOptions& o);
  // The pull-through cache.
  Status StartMirror(const ServerOptions& o);
  // The dashboard's listener (the REST API, the index, the pull-through routes).
  Status StartHttp(const ServerOptions& o);
  // The locker that resolves provisioned cells' locks at submit, reading each index
  // through the pull-through cache when farmd serves one (after the dashboard started).
  Status StartLocker(const ServerOptions& config);
  // The gRPC listener.
  Status StartGrpc(const ServerOptions& o);
  // Publishing, webhooks, the sweeper and the schedules.
  Status StartBackground(const ServerOptions& o);
  // Starts the webhook notifier when --webhook named targets; refuses to start farmd
  // over a target it cannot send to.
  Status StartNotifier(const ServerOptions& o);
};

namespace {

// Says in the log what each --upstream-index holds, or why it cannot be read, as farmd
// starts (on a thread of its own: an upstream that is slow to answer delays nothing).
void CheckUpstreamIndexes(std::map<std::string, std::string> indexes) {
  auto fetcher = upstream::MakeCurlFetcher(
      {.connect_timeout_ms = 3'000, .stall_timeout_ms = 10'000, .page_timeout_ms = 10'000});
  for (const auto& [name, url] : indexes) {
    cron::IndexCheck check = cron::CheckUpstreamIndex(*fetcher, name, url);
    if (check.ok) {
      log::Info(check.line);
    } else {
      log::Warn(check.line);
    }
  }
}

// Lists what `farmctl cache add` preloaded earlier again. A preload of an index or tree
// farmd no longer serves, or whose blob is gone, is skipped with a warning.
Status LoadPreloads(store::Store* store, mirror::PullThroughCache* cache) {
  FARM_ASSIGN_OR_RETURN(auto rows, store->ListUpstreamPreloads());
  for (const store::UpstreamPreloadRow& row : rows) {
    Result<mirror::PreloadKind> kind = mirror::ParsePreloadKind(row.kind);
    Status s = kind.ok() ? cache->AddPreloaded(row.source, *kind, row.path, row.sha256, row.size)
                         : kind.status();
    if (!s.ok())
      log::Warn("preloaded " + row.source + "/" + row.path + " not served: " + s.ToString());
  }
  if (!rows.empty())
    log::Info("pull-through cache: " + std::to_string(rows.size()) + " preloaded files");
  return Status::Ok();
}

// Where the pull-through cache stages its downloads (the blob store's file system).
std::string StagingDir(const ServerOptions& options) {
  return options.data_dir + "/upstream-staging";
}

// Source archives are collected once a minute (the first time right after start).
constexpr int64_t kSourceCollectionPasses = 60;

// Replaces the port of "host:port" with `port`.
std::string WithPort(const std::string& listen, int port) {
  size_t colon = listen.rfind(':');
  return (colon == std::string::npos ? listen : listen.substr(0, colon)) + ":" +
         std::to_string(port);
}

// How the listeners are protected, for the start-up line. Plaintext on an address other
// machines reach is only possible with --insecure, and said loudly.
std::string TransportText(const ServerOptions& o) {
  if (o.tls.enabled()) {
    return o.tls.client_ca_file.empty() ? "TLS" : "TLS, workers must present certificates";
  }
  bool exposed =
      !net::IsLoopback(o.listen) || (!o.http.listen.empty() && !net::IsLoopback(o.http.listen));
  if (exposed) {
    log::Warn(
        "--insecure: farmd serves plaintext on an address other machines reach; bearer "
        "tokens, sources and wheels cross the network in clear");
    return "PLAINTEXT, --insecure";
  }
  return "plaintext, loopback only";
}

// Uploads cut short by a crash leave their temporary files behind (up to a source
// archive's size limit each); those whose writer is gone go now. A failure only costs disk.
void SweepTemporaryFiles(store::BlobStore& blobs) {
  auto swept = blobs.SweepTemporaryFiles(RealClock().NowUnixMs() / 1000);
  if (!swept.ok()) {
    log::Warn("cannot sweep the blob store's temporary files: " + swept.status().ToString());
  } else if (swept->files > 0) {
    log::Info("removed " + std::to_string(swept->files) + " temporary file(s) (" +
              fs::HumanBytes(swept->bytes) + ") of uploads that did not finish");
  }
}

}  // namespace

Status FarmServer::Impl::StartLocker(const ServerOptions& config) {
  FARM_ASSIGN_OR_RETURN(sandbox::BuildUser user,
                        sandbox::ResolveBuildUser(config.resolver_user, ::geteuid()));
  sandbox::Confinement confinement = sandbox::Confinement::Detect(resolver_processes, user);
  lock::PipResolverOptions o;
  o.python = config.resolver_python;
  o.pip_wheel = config.resolver_pip;
  o.pip_sha256 = config.resolver_pip_sha256;
  o.work_dir = config.data_dir + "/resolve";
  if (confinement.kind() == sandbox::Confinement::Kind::kUserOnly) {
    // No sandbox binds the folder in: the resolver's user reaches it by its path, and the
    // data directory is farmd's alone (0700). A folder of its own under $TMPDIR instead,
    // which others may cross but not list; each resolution's subfolder is the user's alone.
    FARM_ASSIGN_OR_RETURN(o.work_dir, fs::MakeTempDir("", "farmd-resolve-"));
    if (::chmod(o.work_dir.c_str(), 0711) != 0) {
      return Status::Internal("chmod " + o.work_dir + ": " + std::strerror(errno));
    }
    resolver_tmp = o.work_dir;
  }
  o.fetcher = upstream_fetcher.get();
  // pip reads farmd's routes, whose file URLs name farmd: a lock records where the index
  // itself has each file, as the pull-through cache learned it.
  o.upstream_url = UpstreamUrlOf(mirror.get());
  if (!o.pip_wheel.empty())
    log::Info("environment locks are resolved by " + o.pip_wheel + ", " + confinement.Describe());
  pip_resolver = std::make_unique<lock::PipResolver>(o, &resolver_processes, confinement);
  // pip reads an index through farmd's own pull-through route when there is one (with
  // farmd's internal credential: mirror/internal_access.h), so the files it chooses are the
  // ones workers then fetch from farmd; else, and where the dashboard serves TLS (whose CA
  // farmd does not hold), the index itself.
  std::string base = mirror && dashboard && internal && !config.tls.enabled()
                         ? "http://" + dashboard->address()
                         : "";
  locks::IndexRoutes routes = IndexRoutesOf(config.upstream.indexes, base, internal);
  locker = std::make_unique<locks::EnvLocker>(pip_resolver.get(), store.get(), routes, &RealClock(),
                                              locks::LockerOptions{.glibc = config.lock_glibc});
  ctx.locker = locker.get();
  submitter->SetLocker(locker.get());
  prover->SetLocker(locker.get());
  return Status::Ok();
}

Status FarmServer::Impl::StartNotifier(const ServerOptions& o) {
  if (o.webhooks.empty()) return Status::Ok();
  std::vector<notify::WebhookTarget> targets;
  for (const std::string& flag : o.webhooks) {
    FARM_ASSIGN_OR_RETURN(auto target, notify::ParseWebhookTarget(flag, o.secrets));
    targets.push_back(std::move(target));
  }
  store::WebhookStore* outbox = store::AsWebhookStore(store.get());
  if (outbox == nullptr) return Status::FailedPrecondition("this store keeps no webhook outbox");
  webhook_http = std::make_unique<httpc::CurlHttpClient>();
  notifier = std::make_unique<notify::Notifier>(notify::NotifierDeps{.store = store.get(),
                                                                     .outbox = outbox,
                                                                     .clock = &RealClock(),
                                                                     .http = webhook_http.get()},
                                                std::move(targets), o.notify);
  notifier->Start();
  log::Info("webhooks: " + std::to_string(o.webhooks.size()) + " target(s)");
  return Status::Ok();
}

Status FarmServer::Impl::OpenStores(const ServerOptions& o) {
  FARM_RETURN_IF_ERROR(fs::MakeDirs(o.data_dir, 0700));
  FARM_ASSIGN_OR_RETURN(
      store, store::IsPostgresUrl(o.store)
                 ? store::OpenPostgresStore(o.store)
                 : store::OpenSqliteStore(o.store.empty() ? o.data_dir + "/farm.db" : o.store));
  FARM_ASSIGN_OR_RETURN(blobs, s3::OpenBlobStore(o.blob_store, o.data_dir, o.secrets));
  SweepTemporaryFiles(*blobs);
  if (o.http.index_redirect_ttl_s > 0 && o.blob_store.url.empty()) {
    return Status::InvalidArgument(
        "--index-redirect needs a blob store with presigned URLs "
        "(--blob-store s3://...)");
  }
  auth = std::make_unique<TokenAuthority>(store.get(), &RealClock());
  FARM_RETURN_IF_ERROR(auth->BootstrapTokens(o.data_dir));
  FARM_ASSIGN_OR_RETURN(keys, provenance::KeyRing::Open(o.data_dir + "/provenance", RealClock()));
  attestor = std::make_unique<attest::Attestor>(store.get(), keys.get(), &RealClock());
  FARM_RETURN_IF_ERROR(store->ExtendRunningLeases(RealClock().NowUnixMs(), o.tunables.lease_ms));
  audit = std::make_unique<audit::AuditLog>(store.get(), &RealClock());
  quotas = std::make_unique<quota::QuotaKeeper>(store.get(), &RealClock(), o.quotas);
  for (const auto& [role, limits] : o.quotas.by_role) {
    log::Info("quotas of each " + role + ": " + quota::DescribeLimits(limits, o.quotas.window_ms));
  }
  ctx.store = store.get();
  ctx.blobs = blobs.get();
  ctx.auth = auth.get();
  ctx.clock = &RealClock();
  ctx.tunables = o.tunables;
  ctx.shutting_down = &shutting_down;
  ctx.quotas = quotas.get();
  ctx.audit = audit.get();
  ctx.attestor = attestor.get();
  ctx.git = o.git;
  ctx.serves_toolkits = o.upstream.trees.count("redist") > 0;
  resolver = std::make_unique<cron::GitSourceResolver>(&processes, o.git, o.git_resolve);
  ctx.resolver = resolver.get();
  // Watches and following matrices read the upstream indexes directly (not through the
  // pull-through cache, whose pages are kept for a while).
  upstream_fetcher = upstream::MakeCurlFetcher();
  ctx.upstream_fetcher = upstream_fetcher.get();
  ctx.watches =
      cron::WatchSettings{.upstreams = {.indexes = o.upstream.indexes, .trees = o.upstream.trees},
                          .min_poll_seconds = o.watch_min_poll_seconds};
  return Status::Ok();
}

void FarmServer::Impl::MakeUseCases(const ServerOptions& o) {
  store::Store* s = store.get();
  control = std::make_unique<builds::Control>(
      builds::ControlDeps{.builds = s,
                          .control = s,
                          .artifacts = s,
                          .validations = s,
                          .workers = s,
                          .names = s,
                          .clock = &RealClock(),
                          .audit = audit.get(),
                          .max_attempts = o.tunables.max_attempts});
  submitter = std::make_unique<builds::Submitter>(
      builds::SubmitDeps{.plan = {.builds = s,
                                  .sources = SourceDepsOf(ctx),
                                  .clock = &RealClock(),
                                  .resolver = resolver.get(),
                                  .git = o.git,
                                  .watches = ctx.watches,
                                  .upstream_fetcher = upstream_fetcher.get(),
                                  .max_attempts = o.tunables.max_attempts},
                         .control = s,
                         .names = s,
                         .quotas = quotas.get(),
                         .inputs_key = builds::KeyWithInputs});
  requests = std::make_unique<requests::Requests>(requests::RequestDeps{
      .requests = store::AsRequestStore(s),
      .builds = s,
      .schedules = s,
      .names = s,
      .submitter = submitter.get(),
      .principal_named =
          [tokens = auth.get()](const std::string& name) { return tokens->PrincipalNamed(name); },
      .clock = &RealClock(),
      .audit = audit.get(),
      .settings = o.requests});
  recipes = std::make_unique<builds::RecipeCache>(s);
  builds::ValidationSigner sign = [signer = attestor.get()](
                                      const store::JobRow& job, int attempt,
                                      const farm::v1::ValidationReport& report,
                                      const std::string& worker) {
    return signer->AttestValidation(job, attempt, report, worker);
  };
  completer = std::make_unique<builds::Completer>(
      builds::CompletionDeps{.builds = s,
                             .artifacts = s,
                             .leases = s,
                             .graph = s,
                             .recipes = recipes.get(),
                             .clock = &RealClock(),
                             .sign_validation = std::move(sign),
                             .inputs_key = builds::KeyWithInputs});
  heartbeats = std::make_unique<builds::Heartbeats>(
      builds::HeartbeatDeps{.workers = s,
                            .leases = s,
                            .jobs = s,
                            .visits = s,
                            .clock = &RealClock(),
                            .lease_ms = o.tunables.lease_ms,
                            .serves_toolkits = ctx.serves_toolkits});
  dispatcher = std::make_unique<sched::Dispatcher>(
      sched::FleetSource{s, &RealClock(), ctx.fleet_cache.get()}, o.tunables.lease_ms, &peers);
  ctx.control = control.get();
  ctx.submitter = submitter.get();
  ctx.requests = requests.get();
  ctx.recipes = recipes.get();
  ctx.heartbeats = heartbeats.get();
  ctx.completer = completer.get();
  ctx.dispatcher = dispatcher.get();
}

void FarmServer::Impl::MakeServices(const ServerOptions& o) {
  schedule_submitter = std::make_unique<builds::ScheduleSubmitter>(submitter.get(), auth.get());
  poller = std::make_unique<cron::UpstreamWatchPoller>(upstream_fetcher.get(), resolver.get(),
                                                       ctx.watches.upstreams);
  schedules = std::make_unique<cron::ScheduleRunner>(store.get(), &RealClock(), resolver.get(),
                                                     schedule_submitter.get(),
                                                     cron::RunnerOptions{}, poller.get());
  prover =
      std::make_unique<builds::NewTorchProver>(store.get(), &RealClock(), o.tunables.max_attempts);
  schedules->SetTorchProver(prover.get());
  schedule_control = std::make_unique<builds::ScheduleControl>(
      builds::ScheduleControlDeps{.schedules = store.get(),
                                  .names = store.get(),
                                  .submitter = submitter.get(),
                                  .runner = schedules.get(),
                                  .sources = SourceDepsOf(ctx),
                                  .watches = ctx.watches,
                                  .clock = &RealClock(),
                                  .audit = audit.get()});
  ctx.schedule_control = schedule_control.get();
  hosts = std::make_unique<hosts::HostManager>(
      store.get(), &host_processes, &RealClock(),
      hosts::HostOptions{.playbooks_dir = o.playbooks_dir,
                         .group_vars_dir = o.hosts_group_vars_dir,
                         .work_dir = o.data_dir + "/hosts",
                         .env = hosts::HostManager::AnsibleEnv()},
      [tokens = auth.get()](const std::string& host) {
        return tokens->Create("enroll", "host " + host);
      });
  ctx.hosts = hosts.get();
  client_service = std::make_unique<ClientService>(&ctx);
  worker_service = std::make_unique<WorkerService>(&ctx);
}

Status FarmServer::Impl::StartMirror(const ServerOptions& o) {
  // The pull-through cache of the upstreams workers provision from, served by the
  // dashboard's listener (started before the gRPC API, so every worker's registration
  // learns its address).
  if (!o.upstream.indexes.empty() || !o.upstream.trees.empty()) {
    if (o.http.listen.empty()) {
      return Status::InvalidArgument("--upstream-index and --upstream-tree need --http-listen");
    }
    mirror::MirrorOptions upstream = o.upstream;
    upstream.staging_dir = StagingDir(o);
    mirror_fetcher = upstream::MakeCurlFetcher(
        {.redirects = {.any_host = false, .allowed_hosts = upstream.allowed_hosts},
         .cancelled = mirror_cancelled});
    mirror =
        std::make_unique<mirror::PullThroughCache>(upstream, mirror_fetcher.get(), blobs.get(),
                                                   store::AsMirrorStore(store.get()), &RealClock());
    FARM_RETURN_IF_ERROR(mirror->Start());
    FARM_RETURN_IF_ERROR(LoadPreloads(store.get(), mirror.get()));
    ctx.mirror = mirror.get();
    index_check = std::thread(CheckUpstreamIndexes, o.upstream.indexes);
    ctx.upstream_url = o.upstream_url;
    // farmd's own pip (the lock resolver) reads these routes as a worker would, with
    // internal->IndexUrl("http://" + dashboard address, index) as its index URL.
    internal = mirror::InternalAccess::Generate();
    ctx.internal = internal.get();
  } else {
    // A farmd started without upstreams still removes what a killed one left downloading.
    mirror::SweepStaging(StagingDir(o), RealClock().NowUnixMs() / 1000);
  }
  return Status::Ok();
}

Status FarmServer::Impl::StartHttp(const ServerOptions& o) {
  if (o.http.listen.empty()) return Status::Ok();
  http::DashboardOptions http = o.http;
  http.tls = o.tls;
  http.variant_wheels_dir = o.data_dir + "/variant-wheels";
  http::DashboardDeps deps = ctx;  // the part both front ends share
  FARM_ASSIGN_OR_RETURN(dashboard, http::Dashboard::Start(http, deps));
  if (!o.http_ready_file.empty()) {
    FARM_RETURN_IF_ERROR(fs::WriteFileAtomic(o.http_ready_file, dashboard->address() + "\n"));
  }
  const std::string own =
      std::string(http.tls.enabled() ? "https" : "http") + "://" + dashboard->address();
  if (mirror && ctx.upstream_url.empty()) ctx.upstream_url = own;
  ctx.http_url = http.public_url.empty() ? own : http.public_url;
  while (ctx.http_url.size() > 8 && ctx.http_url.back() == '/') ctx.http_url.pop_back();
  log::Info("dashboard at " + own + "/");
  return Status::Ok();
}

Status FarmServer::Impl::StartGrpc(const ServerOptions& o) {
  FARM_ASSIGN_OR_RETURN(auto credentials, net::ServerCredentials(o.listen, o.tls));
  ctx.require_worker_certs = !o.tls.client_ca_file.empty();
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(o.listen, credentials, &port);
  net::AddServerKeepalive(&builder);
  builder.RegisterService(client_service.get());
  builder.RegisterService(worker_service.get());
  builder.SetMaxReceiveMessageSize(16 << 20);
  // The synchronous server's threads poll and run handlers; past MAX_POLLERS idle pollers
  // a thread exits, and a new one starts when all are busy. With a thousand workers'
  // heartbeats and completions, gRPC's default of 2 made farmd start and end threads all
  // the time (clone, stack faults, exit): measured in docs/benchmarks.md. 64 helped while
  // completions held a thread each until their batch committed; since they are served by
  // the callback API, 16 and 64 measure the same.
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 2);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 16);
  server = builder.BuildAndStart();
  if (!server || port == 0) return Status::Unavailable("cannot listen on " + o.listen);
  address = WithPort(o.listen, port);
  hosts->SetServerAddress(address);
  return Status::Ok();
}

Status FarmServer::Impl::StartBackground(const ServerOptions& o) {
  FARM_ASSIGN_OR_RETURN(publishing, publish::PublishingService::Start(
                                        {.secrets = o.secrets,
                                         .github_api = o.github_api,
                                         .hf_endpoint = o.hf_endpoint,
                                         .publish_pending_hardware = o.publish_pending_hardware,
                                         .interval_ms = o.publish_interval_ms,
                                         .work_dir = o.data_dir + "/publish",
                                         .with_provenance = o.publish_provenance,
                                         .github_max_asset_bytes = o.github_max_asset_bytes,
                                         .hf_max_file_bytes = o.hf_max_file_bytes},
                                        store.get(), blobs.get(), &RealClock(), attestor.get()));
  FARM_RETURN_IF_ERROR(StartNotifier(o));
  revalidator =
      std::make_unique<sched::Revalidator>(store.get(), &RealClock(), o.tunables.max_attempts);
  sched::SweepTask collect{
      .what = "collecting source archives",
      .every_passes = kSourceCollectionPasses,
      .run = [deps = SourceDepsOf(ctx), retention = o.tunables.source_retention_ms]() -> Status {
        return builds::CollectSources(deps, retention).status();
      }};
  sweeper = std::make_unique<sched::Sweeper>(
      store.get(), &RealClock(), revalidator.get(), o.tunables.lease_ms,
      std::vector<sched::SweepTask>{std::move(collect)}, builds::KeyWithInputs);
  sweeper->Start();
  schedules->Start(1000);
  return Status::Ok();
}

Result<std::unique_ptr<FarmServer>> FarmServer::Start(const ServerOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  FARM_RETURN_IF_ERROR(impl->OpenStores(options));
  impl->MakeUseCases(options);
  impl->MakeServices(options);
  FARM_RETURN_IF_ERROR(impl->StartMirror(options));
  FARM_RETURN_IF_ERROR(impl->StartHttp(options));
  FARM_RETURN_IF_ERROR(impl->StartLocker(options));
  FARM_RETURN_IF_ERROR(impl->StartGrpc(options));
  FARM_RETURN_IF_ERROR(impl->StartBackground(options));
  if (!options.ready_file.empty()) {
    FARM_RETURN_IF_ERROR(fs::WriteFileAtomic(options.ready_file, impl->address + "\n"));
  }
  log::Info("farmd serving gRPC on " + impl->address + " (" + TransportText(options) +
            "), data in " + options.data_dir);
  return std::unique_ptr<FarmServer>(new FarmServer(std::move(impl)));
}

FarmServer::FarmServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

FarmServer::~FarmServer() { Shutdown(); }

const std::string& FarmServer::address() const { return impl_->address; }

std::string FarmServer::http_address() const {
  return impl_->dashboard ? impl_->dashboard->address() : "";
}

ServiceContext* FarmServer::context() { return &impl_->ctx; }

void FarmServer::Shutdown() {
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->stopped) return;
    impl_->stopped = true;
  }
  impl_->shutting_down = true;
  // Waiting polls end first: the server's shutdown waits for every open call.
  impl_->worker_service->StopDispatch();
  if (impl_->dashboard) impl_->dashboard->Shutdown();
  // Upstream downloads in progress stop at their next block; waiting ones are dropped.
  impl_->mirror_cancelled->store(true);
  if (impl_->mirror) impl_->mirror->Stop();
  impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  if (impl_->sweeper) impl_->sweeper->Stop();
  if (impl_->index_check.joinable()) impl_->index_check.join();
  if (impl_->hosts) impl_->hosts->Stop();
  if (impl_->schedules) impl_->schedules->Stop();
  if (impl_->publishing) impl_->publishing->Stop();
  if (impl_->notifier) impl_->notifier->Stop();
  if (!impl_->resolver_tmp.empty()) (void)fs::RemoveAll(impl_->resolver_tmp);
  log::Info("farmd stopped");
}

}  // namespace farm::app
