#include "daemon/app/flags.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <utility>

#include "common/lock/pip_resolver.h"
#include "common/log.h"
#include "common/net/tls.h"
#include "common/upstream/fetcher.h"
#include "daemon/hosts/host_manager.h"

namespace farm::app {
namespace {

// --quota-ROLE and --quota-window-seconds over the defaults (docs/limits.md, "Quotas").
Status QuotaPolicyFromFlags(const Flags& flags, quota::Policy* policy) {
  for (const char* role : {"submitter", "admin"}) {
    const std::string flag = std::string("quota-") + role;
    if (!flags.Has(flag)) continue;
    Status parsed = quota::ParseLimits(flags.Get(flag), &policy->by_role[role]);
    if (!parsed.ok()) return parsed.WithContext("--" + flag);
  }
  auto window = flags.GetInt("quota-window-seconds", policy->window_ms / 1000);
  if (!window.ok() || *window < 1 || *window > 366 * 24 * 3600) {
    return Status::InvalidArgument(
        "--quota-window-seconds must be a number of seconds from 1 to a year");
  }
  policy->window_ms = *window * 1000;
  return Status::Ok();
}

// An integer flag within [min, max]; `what` completes "--NAME must be ...".
Status IntFlag(const Flags& flags, const std::string& name, int64_t min, int64_t max,
               const std::string& what, int64_t* into) {
  auto value = flags.GetInt(name, *into);
  if (!value.ok() || *value < min || *value > max) {
    return Status::InvalidArgument("--" + name + " must be " + what);
  }
  *into = *value;
  return Status::Ok();
}

Status LimitsFromFlags(const Flags& flags, ServerOptions* options) {
  api::Tunables& t = options->tunables;
  for (auto [name, value] : {std::pair{"lease-ms", &t.lease_ms},
                             {"heartbeat-ms", &t.heartbeat_ms},
                             {"max-log-bytes", &t.max_log_bytes},
                             {"max-wheel-bytes", &t.max_artifact_bytes},
                             {"max-source-bytes", &t.max_source_bytes}}) {
    auto parsed = flags.GetInt(name, *value);
    if (!parsed.ok())
      return Status::InvalidArgument("--" + std::string(name) + ": " + parsed.status().message());
    if (*parsed < 1)
      return Status::InvalidArgument("--" + std::string(name) + ": must be at least 1");
    *value = *parsed;
  }
  int64_t days = 30;
  FARM_RETURN_IF_ERROR(
      IntFlag(flags, "source-retention-days", 0, 36500, "a number of days from 0 to 36500", &days));
  t.source_retention_ms = days * 24 * 3600 * 1000;
  FARM_RETURN_IF_ERROR(QuotaPolicyFromFlags(flags, &options->quotas));
  requests::Settings& r = options->requests;
  r.window_ms = options->quotas.window_ms;
  FARM_RETURN_IF_ERROR(IntFlag(flags, "request-quota", -1, 1'000'000,
                               "a number of requests from 0 to 1000000, or -1", &r.per_principal));
  return IntFlag(flags, "anonymous-requests", 0, 1'000'000,
                 "a number of requests from 0 to 1000000", &r.anonymous_per_address);
}

Status HttpFromFlags(const Flags& flags, ServerOptions* options) {
  http::DashboardOptions& h = options->http;
  h.listen = flags.Get("http-listen");
  h.web_root = flags.Get("web-root");
  h.public_read = !flags.Has("private-read");
  h.index_include_pending = flags.Has("index-include-pending");
  options->http_ready_file = flags.Get("http-ready-file");
  for (auto [name, value] : {std::pair{"http-max-connections", &h.max_connections},
                             {"http-max-connections-per-address", &h.max_connections_per_address},
                             {"http-header-timeout-ms", &h.header_timeout_ms},
                             {"http-body-timeout-ms", &h.body_timeout_ms},
                             {"http-idle-timeout-ms", &h.idle_timeout_ms}}) {
    int64_t v = *value;
    FARM_RETURN_IF_ERROR(IntFlag(flags, name, 1, 1'000'000, "a number from 1 to 1000000", &v));
    *value = static_cast<int>(v);
  }
  return Status::Ok();
}

// The largest file each destination takes: GitHub's and the Hub's documented limits
// unless a flag says otherwise (GitHub Enterprise, a private Hub); the index has none.
Status UploadLimitsFromFlags(const Flags& flags, ServerOptions* options) {
  constexpr int64_t kMax = int64_t{1} << 50;
  const std::string what = "a number of bytes from 0 (no limit) to 2^50";
  FARM_RETURN_IF_ERROR(
      IntFlag(flags, "github-max-asset-bytes", 0, kMax, what, &options->github_max_asset_bytes));
  FARM_RETURN_IF_ERROR(
      IntFlag(flags, "hf-max-file-bytes", 0, kMax, what, &options->hf_max_file_bytes));
  return IntFlag(flags, "index-max-wheel-bytes", 0, kMax, what,
                 &options->http.index_max_wheel_bytes);
}

Status PublishingFromFlags(const Flags& flags, ServerOptions* options) {
  if (flags.Has("secrets-file")) {
    auto secrets = auth::LoadSecretsFile(flags.Get("secrets-file"));
    if (!secrets.ok()) {
      return Status::InvalidArgument("cannot read secrets: " + secrets.status().ToString());
    }
    options->secrets = std::move(secrets).value();
  }
  auth::AddSecretsFromEnvironment(&options->secrets);
  FARM_RETURN_IF_ERROR(s3::BlobStoreSettingsFromFlags(flags, &options->blob_store,
                                                      &options->http.index_redirect_ttl_s));
  options->github_api = flags.Get("github-api", options->github_api);
  options->hf_endpoint = flags.Get("hf-endpoint", options->hf_endpoint);
  options->publish_pending_hardware = flags.Has("publish-pending-hardware");
  options->publish_provenance = !flags.Has("publish-without-provenance");
  auto interval = flags.GetInt("publish-interval-ms", 1000);
  if (!interval.ok()) return Status::InvalidArgument(interval.status().message());
  options->publish_interval_ms = *interval;
  return UploadLimitsFromFlags(flags, options);
}

// How provisioned cells' environments are resolved into locks.
Status LockFlags(const Flags& flags, ServerOptions* options) {
  options->resolver_pip = flags.Get("resolver-pip", lock::FindPipWheel());
  options->resolver_pip_sha256 = flags.Get("resolver-pip-sha256");
  options->resolver_python = flags.Get("resolver-python", options->resolver_python);
  options->resolver_user = flags.Get("resolver-user", options->resolver_user);
  options->lock_glibc = flags.Get("lock-glibc", options->lock_glibc);
  if (!options->resolver_pip.empty() && !options->resolver_pip.ends_with(".whl")) {
    return Status::InvalidArgument("--resolver-pip names the farm's pip wheel file, got " +
                                   options->resolver_pip);
  }
  static const std::regex glibc_re(R"(2\.\d{1,2})");
  if (!std::regex_match(options->lock_glibc, glibc_re)) {
    return Status::InvalidArgument("--lock-glibc wants 2.N (such as 2.28), got " +
                                   options->lock_glibc);
  }
  return Status::Ok();
}

// NAME=URL of --upstream-index and --upstream-tree: the name goes into farmd's routes
// (/upstream/pypi/NAME/), the URL is fetched; both checked before farmd starts. The URL may
// carry a private index's credentials: no error or log line repeats them.
Status AddUpstream(std::string_view flag, const std::string& item,
                   std::map<std::string, std::string>* into) {
  const std::string how = "--" + std::string(flag) + " wants NAME=http(s)://HOST/PATH/, got \"" +
                          log::RedactUrlCredentials(item) + "\"";
  size_t eq = item.find('=');
  std::string name = item.substr(0, eq);
  std::string url = eq == std::string::npos ? "" : item.substr(eq + 1);
  bool name_ok = !name.empty() && name.size() <= 64 &&
                 std::all_of(name.begin(), name.end(),
                             [](char c) {
                               return std::islower(static_cast<unsigned char>(c)) ||
                                      std::isdigit(static_cast<unsigned char>(c)) || c == '-' ||
                                      c == '_' || c == '.';
                             }) &&
                 name.front() != '.';
  if (!name_ok) return Status::InvalidArgument(how + ": NAME is [a-z0-9._-], as cu128");
  if (!upstream::IsHttpUrl(url)) return Status::InvalidArgument(how);
  if (into->count(name) > 0) {
    return Status::InvalidArgument("--" + std::string(flag) + " " + name + " is given twice");
  }
  std::string authority = url.substr(url.find("://") + 3);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  if (size_t at = authority.rfind('@'); at != std::string::npos) {
    std::string userinfo = authority.substr(0, at);
    log::RegisterSecret(userinfo);
    if (size_t colon = userinfo.find(':'); colon != std::string::npos) {
      log::RegisterSecret(userinfo.substr(colon + 1));
    }
  }
  (*into)[name] = url;
  return Status::Ok();
}

// The pull-through cache (docs/environments.md, "farmd's pull-through cache").
Status UpstreamFromFlags(const Flags& flags, ServerOptions* options) {
  mirror::MirrorOptions& m = options->upstream;
  for (auto [flag, into] : {std::pair{"upstream-index", &m.indexes}, {"upstream-tree", &m.trees}}) {
    for (const std::string& item : flags.GetAll(flag)) {
      FARM_RETURN_IF_ERROR(AddUpstream(flag, item, into));
    }
  }
  for (const std::string& host : flags.GetAll("upstream-allow-host")) {
    if (host.empty() || host.find_first_of("/:@ ") != std::string::npos) {
      return Status::InvalidArgument("--upstream-allow-host wants a host name, got " + host);
    }
    std::string lower = host;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    m.allowed_hosts.insert(lower);
  }
  if (flags.Has("upstream-cache-max-gib")) {
    const std::string text = flags.Get("upstream-cache-max-gib");
    char* end = nullptr;
    double gib = std::strtod(text.c_str(), &end);
    if (text.empty() || end == nullptr || *end != '\0' || !(gib >= 0) || gib > 1e6) {
      return Status::InvalidArgument(
          "--upstream-cache-max-gib must be a number of GiB (0: no bound), got " + text);
    }
    m.max_bytes = static_cast<int64_t>(gib * double(int64_t{1} << 30));
  }
  m.anonymous_pulls = flags.Has("upstream-anonymous-pulls");
  int64_t in_flight = m.limits.max_in_flight;
  int64_t per_address = m.limits.max_per_address;
  FARM_RETURN_IF_ERROR(
      IntFlag(flags, "upstream-max-fetches", 1, 256, "a number from 1 to 256", &in_flight));
  FARM_RETURN_IF_ERROR(IntFlag(flags, "upstream-max-fetches-per-host", 1, 256,
                               "a number from 1 to 256", &per_address));
  m.limits.max_in_flight = static_cast<int>(in_flight);
  m.limits.max_per_address = static_cast<int>(per_address);
  options->upstream_url = flags.Get("upstream-url");
  return Status::Ok();
}

Status SourcesFromFlags(const Flags& flags, ServerOptions* options) {
  options->playbooks_dir =
      flags.Get("playbooks-dir", hosts::HostManager::FindPlaybooksDir("/proc/self/exe"));
  std::string example_vars = options->playbooks_dir + "/inventories/example/group_vars";
  if (options->playbooks_dir.empty() || !std::filesystem::is_directory(example_vars)) {
    example_vars = "";
  }
  options->hosts_group_vars_dir = flags.Get("hosts-group-vars", example_vars);
  options->git.allow_ssh = flags.Has("git-ssh");
  if (flags.Has("git-ca-file")) {
    options->git.ca_file = std::filesystem::absolute(flags.Get("git-ca-file")).string();
  }
  int64_t git_timeout_s = 30;
  FARM_RETURN_IF_ERROR(IntFlag(flags, "git-timeout-s", 1, 3600,
                               "a number of seconds from 1 to 3600", &git_timeout_s));
  options->git.timeout_ms = git_timeout_s * 1000;
  options->git_resolve = !flags.Has("no-git-resolve");
  int64_t min_poll = 60;
  FARM_RETURN_IF_ERROR(IntFlag(flags, "watch-min-poll-s", 1, 86400,
                               "a number of seconds from 1 to 86400", &min_poll));
  options->watch_min_poll_seconds = static_cast<int>(min_poll);
  FARM_RETURN_IF_ERROR(UpstreamFromFlags(flags, options));
  return LockFlags(flags, options);
}

Status WebhooksFromFlags(const Flags& flags, ServerOptions* options) {
  options->webhooks = flags.GetAll("webhook");
  options->notify.public_url = flags.Get("public-url");
  if (const std::string& url = options->notify.public_url;
      !url.empty() && !url.starts_with("https://") && !url.starts_with("http://")) {
    return Status::InvalidArgument("--public-url wants an http(s) URL, got " + url);
  }
  options->http.public_url = options->notify.public_url;
  for (auto [name, into] : {std::pair{"webhook-interval-ms", &options->notify.interval_ms},
                            {"webhook-backoff-ms", &options->notify.backoff_base_ms}}) {
    FARM_RETURN_IF_ERROR(
        IntFlag(flags, name, 1, INT64_MAX, "a positive number of milliseconds", into));
  }
  int64_t attempts = options->notify.max_attempts;
  FARM_RETURN_IF_ERROR(
      IntFlag(flags, "webhook-max-attempts", 1, 100, "a number from 1 to 100", &attempts));
  options->notify.max_attempts = static_cast<int>(attempts);
  return Status::Ok();
}

// The pull-through cache's flags (docs/environments.md, "farmd's pull-through routes").
std::vector<FlagSpec> UpstreamFlagSpecs() {
  return {
      {"upstream-index", "NAME=URL",
       "serve a package index workers provision from at /upstream/pypi/NAME/simple/, pulled "
       "through from URL (repeatable; e.g. cu128=https://download.pytorch.org/whl/cu128/)"},
      {"upstream-tree", "NAME=URL",
       "serve an archive folder at /upstream/tree/NAME/ (redist: NVIDIA's CUDA redist, python: "
       "relocatable CPython archives), pulled through from URL (repeatable)"},
      {"upstream-url", "URL",
       "the base workers fetch the upstreams through (default: the dashboard's address)"},
      {"upstream-allow-host", "HOST",
       "a host besides an upstream's own that its file URLs and redirects may name "
       "(repeatable; e.g. files.pythonhosted.org for PyPI); others are refused"},
      {"upstream-cache-max-gib", "N",
       "bytes of upstream files farmd keeps, least recently used evicted first; preloaded "
       "files do not count (default 100; 0: no bound)"},
      {"upstream-anonymous-pulls", "",
       "let requests without a worker's or admin's token make farmd download upstream files "
       "nobody asked for before (default: only stored files are served to them)"},
      {"upstream-max-fetches", "N", "upstream requests in flight at once (default 8)"},
      {"upstream-max-fetches-per-host", "N",
       "upstream requests in flight to one host:port (default 4)"},
  };
}

}  // namespace

std::vector<FlagSpec> FarmdFlagSpecs() {
  std::vector<FlagSpec> specs = {
      {"config", "FILE", "YAML file of settings named like these flags; flags win"},
      {"data-dir", "DIR", "state directory (farm.db, blobs/, tokens); default ./data"},
      {"store", "URL",
       "postgres://... keeps the state in PostgreSQL, one active farmd per database and the "
       "others standby (docs/postgresql.md); default the SQLite file <data-dir>/farm.db"},
      {"listen", "HOST:PORT", "gRPC address; port 0 picks one (default 127.0.0.1:7070)"},
      {"ready-file", "FILE", "write the bound gRPC address here once serving"},
      {"lease-ms", "MS", "lease of a running job, renewed by heartbeats (default 30000)"},
      {"heartbeat-ms", "MS", "heartbeat interval told to workers (default 2000)"},
      {"max-log-bytes", "N",
       "log text stored per job attempt; the rest is dropped (default 64 MiB)"},
      {"max-wheel-bytes", "N", "largest wheel a worker may upload (default 4 GiB)"},
      {"max-source-bytes", "N", "largest source archive a client may upload (default 8 GiB)"},
      {"source-retention-days", "N",
       "remove source archives unused this long that no schedule "
       "or unfinished build names; 0 keeps them (default 30)"},
      {"quota-submitter", "SPEC",
       "limits of each submitter principal (token name): submissions=N (per window), "
       "queued-jobs=N, stored-bytes=N, each a number or unlimited, comma-separated "
       "(default submissions=120,queued-jobs=2000,stored-bytes=107374182400)"},
      {"quota-admin", "SPEC", "the same for admins (default: unlimited)"},
      {"quota-window-seconds", "N",
       "the window submissions and wheel requests are counted over (default 3600)"},
      {"request-quota", "N",
       "wheel requests each principal may file per window; admins and -1 are not limited "
       "(default 30)"},
      {"anonymous-requests", "N",
       "wheel requests each address without a token may file per window, each waiting for an "
       "admin's approval; 0 takes none (default 0)"},
      {"http-listen", "HOST:PORT", "serve the dashboard, /api/v1, /metrics and /simple/ here"},
      {"http-ready-file", "FILE", "write the dashboard's bound address here once serving"},
      {"http-max-connections", "N", "simultaneous HTTP connections; more get 503 (default 512)"},
      {"http-max-connections-per-address", "N",
       "simultaneous HTTP connections of one client address (IPv6: one /64); more get 503 "
       "(default 32)"},
      {"http-header-timeout-ms", "MS",
       "whole time for a TLS handshake, and for a request's head (default 10000)"},
      {"http-body-timeout-ms", "MS", "whole time for a request's body (default 30000)"},
      {"http-idle-timeout-ms", "MS",
       "how long a kept-alive HTTP connection waits for its next request (default 30000)"},
      {"web-root", "DIR", "serve dashboard assets from DIR instead of the embedded copies"},
      {"private-read", "", "require a viewer token for read-only pages and the index"},
      {"index-include-pending", "", "list wheels still waiting for hardware validation"},
      {"secrets-file", "FILE", "KEY=VALUE tokens for publishing (mode 0600); else $FARM_<KEY>"},
      {"github-api", "URL", "GitHub REST API base for publishing (default https://api.github.com)"},
      {"hf-endpoint", "URL", "Hugging Face Hub endpoint (default https://huggingface.co)"},
      {"publish-pending-hardware", "", "also publish wheels whose validation waits for a GPU"},
      {"publish-interval-ms", "MS", "pause between passes of the publisher (default 1000)"},
      {"publish-without-provenance", "",
       "publish wheels without their .intoto.jsonl and the signed SHA256SUMS"},
      {"github-max-asset-bytes", "N",
       "largest wheel published to GitHub Releases (default 2147483647: under 2 GiB)"},
      {"hf-max-file-bytes", "N",
       "largest wheel published to the Hugging Face Hub (default 50000000000: 50 GB)"},
      {"index-max-wheel-bytes", "N", "largest wheel the package index lists (default 0: any)"},
      {"playbooks-dir", "DIR", "playbooks farmctl hosts provision runs (default: the checkout's)"},
      {"hosts-group-vars", "DIR",
       "group_vars of the host kinds (default: the example inventory's)"},
      {"git-ssh", "", "also allow git sources over ssh (default: https only)"},
      {"git-ca-file", "PEM",
       "certificate authorities for https git servers (default: the system's)"},
      {"git-timeout-s", "N", "longest a `git ls-remote` of a recipe's ref may take (default 30)"},
      {"no-git-resolve", "", "run no git at all: git sources must name their full commit"},
      {"resolver-pip", "PIP.whl",
       "the farm's pip that resolves environment locks (default: Debian's python3-pip-whl)"},
      {"resolver-pip-sha256", "HEX", "its sha256, checked before each resolution"},
      {"resolver-python", "PATH", "the interpreter the resolver's pip runs on (/usr/bin/python3)"},
      {"resolver-user", "auto|NAME|UID:GID",
       "who the resolver runs as under root (auto: farm-build, else nobody)"},
      {"lock-glibc", "2.N",
       "the oldest glibc of the workers: locked wheels must run there "
       "(default 2.28)"},
      {"public-url", "URL",
       "the dashboard's address for people (https://farm.example.org): the links of the feed "
       "and of webhooks (default: links relative to the dashboard)"},
      {"webhook", "NAME[:KINDS]",
       "POST coverage events to the URL the secrets file holds as WEBHOOK_URL_<NAME> "
       "(repeatable); KINDS: wheel_validated,build_failed (default both)"},
      {"webhook-interval-ms", "MS", "pause between passes of the webhook sender (default 1000)"},
      {"webhook-backoff-ms", "MS",
       "wait after a failed delivery, doubling per attempt up to 10 min (default 2000)"},
      {"webhook-max-attempts", "N", "deliveries tried before an event is given up (default 10)"},
      {"watch-min-poll-s", "N",
       "shortest poll interval a schedule's upstream watch may ask for (default 60)"},
      {"log-json", "", "log one JSON object per line"},
      {"help", "", "show this help"},
      {"version", "", "print the version and exit"},
  };
  for (const FlagSpec& f : UpstreamFlagSpecs()) specs.push_back(f);
  for (const FlagSpec& f : net::ServerTlsFlags()) specs.push_back(f);
  for (const FlagSpec& f : s3::BlobStoreFlags()) specs.push_back(f);
  return specs;
}

Result<ServerOptions> OptionsFromFlags(const Flags& flags) {
  ServerOptions options;
  options.data_dir = flags.Get("data-dir", "data");
  options.store = flags.Get("store");
  options.listen = flags.Get("listen", "127.0.0.1:7070");
  options.ready_file = flags.Get("ready-file");
  auto tls = net::ServerTlsFromFlags(flags);
  if (!tls.ok()) return Status::InvalidArgument(tls.status().message());
  options.tls = std::move(tls).value();
  FARM_RETURN_IF_ERROR(LimitsFromFlags(flags, &options));
  FARM_RETURN_IF_ERROR(HttpFromFlags(flags, &options));
  FARM_RETURN_IF_ERROR(PublishingFromFlags(flags, &options));
  FARM_RETURN_IF_ERROR(SourcesFromFlags(flags, &options));
  FARM_RETURN_IF_ERROR(WebhooksFromFlags(flags, &options));
  return options;
}

}  // namespace farm::app
