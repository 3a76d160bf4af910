// farmctl's usage text and the table of every flag its commands take.
#include "cli/command_table.h"

#include "common/net/tls.h"

namespace farm::cli {

const char kCommandUsage[] =
    "usage: farmctl [flags] COMMAND [ARGS]\n"
    "commands:\n"
    "  submit RECIPE.yaml      submit a build (--follow to watch, --download DIR for wheels)\n"
    "  list                    recent builds\n"
    "  show BUILD              a build with its jobs, attempts and artifacts\n"
    "  job JOB                 one job\n"
    "  lock BUILD [--job JOB]  the environment lock (pylock.toml) a build installs (--save FILE)\n"
    "  logs JOB                a job's log (--follow, --tail N, --attempt N)\n"
    "  cancel BUILD            cancel a build; running jobs are stopped\n"
    "  retry JOB               run a failed or cancelled job again\n"
    "  validate ARTIFACT       validate the artifact's wheels again on a GPU they run on\n"
    "  download BUILD --dir D  fetch the build's wheels into D, checking sha256\n"
    "  inspect FILE            check a wheel or .so here, no farmd (--arch-list, --cuobjdump)\n"
    "  publish BUILD --to T    publish the build's wheels again: github, hf or all (--replace)\n"
    "  publications BUILD      where the build's wheels are published, and how far\n"
    "  schedules add|update|list|show|pause|resume|delete|run-now   cron and watch builds\n"
    "  coverage                every package's cells and their states (--package, --state, ...)\n"
    "  request PACKAGE         ask the farm for the wheel of one cell (--python, --torch, ...)\n"
    "  requests [approve|refuse ID]   wheel requests and their states (deciding: admin)\n"
    "  workers                 registered workers and what they have\n"
    "  drain WORKER [--undo]   finish current jobs, take no new ones\n"
    "  tokens create|list|revoke   bearer tokens (--role, --name, --ttl 30d; admin)\n"
    "  cache add FILE...|list  preload farmd's upstream cache from files (--index, --tree; admin)\n"
    "  quota [PRINCIPAL] | quota set PRINCIPAL   limits on submissions, queued jobs, bytes\n"
    "  names list|transfer NAME --to P   recipe names and their owners (transfer: admin)\n"
    "  projects list|transfer NAME --to P   project (wheel) names and their owners\n"
    "  audit                   who changed what, refusals included (--limit, --principal; admin)\n"
    "  hosts add|provision|list|show   hosts farmd provisions (--address, --kind, --var k=v)\n"
    "  ca init DIR | ca issue DIR NAME   the farm's own CA and certificates (no farmd)\n"
    "  verify WHEEL|URL        a wheel's signed provenance, no farmd (--keys, "
    "--require-validated-arch)\n"
    "  keys [rotate|revoke ID] the farm's provenance signing keys (--reason; admin to change)\n"
    "  export-index DIR [--from URL] the package index as static files (--base-url)\n"
    "  index make DIR          a folder of wheels as a package index for farmd --upstream-index\n"
    "flags:\n";

std::vector<FlagSpec> AllFlags() {
  std::vector<FlagSpec> specs = {
      {"config", "FILE", "YAML file of flags (server, token-file, ca, ...; default $FARM_CONFIG)"},
      {"server", "HOST:PORT", "farmd address (default $FARM_SERVER or 127.0.0.1:7070)"},
      {"server-file", "FILE", "read the address from farmd's ready file"},
      {"token", "TOKEN", "bearer token (default $FARM_TOKEN)"},
      {"token-file", "FILE", "read the token from FILE (default $FARM_TOKEN_FILE)"},
      {"output", "FORMAT", "text (default) or json"},
      {"timeout-ms", "MS", "deadline of each call (default 30000)"},
      {"python", "VER", "submit, coverage: Python axis value (repeatable); coverage: only it"},
      {"torch", "VER", "submit, coverage: torch axis value (repeatable); coverage: only it"},
      {"cuda", "VER", "submit, coverage: CUDA axis value (repeatable); coverage: only it"},
      {"package", "NAME", "coverage: only this package (recipe name)"},
      {"arch", "ARCH", "coverage: only cells whose arch list holds ARCH (9.0, 12.0a)"},
      {"compute-capability", "CC", "request: the GPU's compute capability (8.9)"},
      {"package-version", "VER",
       "request: the version wanted (default: the newest the farm's recipe builds)"},
      {"state", "STATE",
       "coverage, requests: only cells in STATE: validated, pending_hardware, built, "
       "failed, in_progress, missing"},
      {"arch-list", "LIST", "submit: arch list axis value (repeatable); inspect: requested"},
      {"platform", "TAG", "submit: platform axis value (repeatable)"},
      {"priority", "N", "submit: higher runs first (default 0)"},
      {"force", "",
       "submit, export-index, index: build even if an identical build succeeded; replace a DIR "
       "(DIR/simple) that is not an export"},
      {"source-dir", "DIR",
       "submit, schedules: upload and build this directory instead of the recipe's source"},
      {"source-tarball", "FILE", "submit, schedules: upload and build this tarball instead"},
      {"exclude", "PATTERN",
       "submit, schedules: leave out of the uploaded tree (.gitignore syntax, repeatable)"},
      {"catalog", "DIR",
       "submit, schedules: where required recipes named without a path are found (repeatable)"},
      {"no-gitignore", "", "submit, schedules: upload files .gitignore names too"},
      {"max-source-bytes", "N",
       "submit, schedules: refuse to pack a tree larger than N bytes (default 2 GiB)"},
      {"follow", "", "submit, logs: stream until the build or job ends"},
      {"download", "DIR", "submit: with --follow, fetch the wheels into DIR"},
      {"dir", "DIR", "download: destination directory"},
      {"tail", "N", "logs: only the last N lines"},
      {"attempt", "N", "logs: attempt number (default the current one)"},
      {"limit", "N", "list, audit: how many builds (default 20) or records (default 50)"},
      {"principal", "NAME", "audit: only the records of this principal (a token's name)"},
      {"role", "ROLE", "tokens create: viewer, submitter, admin or enroll"},
      {"name", "NAME", "tokens create, ca init: a name for the token or the CA"},
      {"ttl", "DURATION", "tokens create: lifetime, e.g. 3600, 12h or 30d (default: no expiry)"},
      {"submissions", "N", "quota set: submissions per window, unlimited or default (the role's)"},
      {"queued-jobs", "N", "quota set: pending and running jobs, unlimited or default"},
      {"stored-bytes", "N", "quota set: bytes of builds and sources, unlimited or default"},
      {"version", "", "print the version and exit"},
      {"undo", "", "drain: take jobs again"},
      {"job", "JOB", "lock: the lock of this job (default: the build's first provisioned job)"},
      {"save", "FILE", "lock: write the pylock.toml there"},
      {"cuobjdump", "", "inspect: list images as cuobjdump --list-elf --list-ptx does"},
      {"to", "TARGET",
       "publish, names, projects: github, hf or all; the new owner (names and projects "
       "transfer)"},
      {"replace", "", "publish: overwrite remote files whose bytes differ (admin)"},
      {"cron", "EXPR", "schedules add: five fields or @hourly, @daily, @nightly (03:00), @weekly"},
      {"tz", "ZONE", "schedules add: IANA time zone of the cron expression (default UTC)"},
      {"missed", "POLICY", "schedules add: runs missed while farmd was down: skip or run_once"},
      {"concurrency", "POLICY", "schedules add: skip (while the last run goes) or allow"},
      {"paused", "", "schedules add: create paused"},
      {"watch-torch", "SPEC",
       "schedules add: fire when a torch release matching SPEC (\">=2.8\", \"any\") appears"},
      {"watch-index", "NAME",
       "schedules add: an index the torch watch reads (repeatable; "
       "default cu<CUDA> of each matrix CUDA)"},
      {"watch-prereleases", "", "schedules add: the torch watch also fires for rc/dev releases"},
      {"watch-candidates", "",
       "schedules add: the torch watch also reads each variant's pre-release index "
       "(farmd --upstream-index test-cu130) and builds its releases as release candidates"},
      {"watch-tags", "GLOB", "schedules add: fire when the git source gets a tag matching GLOB"},
      {"watch-branch", "NAME", "schedules add: fire when the git source's branch NAME moves"},
      {"watch-toolkit", "SPEC",
       "schedules add: fire when NVIDIA's redist lists a CUDA matching SPEC (\">=12.8\")"},
      {"watch-tree", "NAME", "schedules add: the farmd --upstream-tree the toolkit watch reads"},
      {"poll", "SECONDS", "schedules add: how often a watch polls (default 600)"},
      {"address", "ADDR", "hosts add: the host's address (ansible_host)"},
      {"kind", "KIND", "hosts add: gb10, rtx5090, wsl2 or datacenter"},
      {"var", "K=V", "hosts add: inventory variable, value as YAML (repeatable)"},
      {"no-wait", "", "hosts provision: return once the run started"},
      {"days", "N", "ca init, ca issue: validity in days (default 3650 for a CA, 825 otherwise)"},
      {"host", "NAME", "ca issue: a DNS name or IP address farmd is reached by (repeatable)"},
      {"server-cert", "", "ca issue: a certificate farmd serves with (needs --host)"},
      {"client-cert", "", "ca issue: a certificate a worker presents (mTLS)"},
      {"out", "DIR", "ca issue: where NAME.pem and NAME.key go (default: the CA's directory)"},
      {"keys", "FILE|URL",
       "verify: the farm's public key set (default: the index's own, or that of the farmd "
       "--server names)"},
      {"provenance", "FILE|URL", "verify: the statements (default: WHEEL.intoto.jsonl)"},
      {"require-validated-arch", "SM",
       "verify: also require a passed validation on this GPU arch (sm_120, 12.0)"},
      {"owner", "PRINCIPAL",
       "verify: also require the build statement to name this owner of the wheel's project"},
      {"reason", "TEXT",
       "keys revoke, requests: why, shown wherever its signatures are refused; "
       "why a request is refused"},
      {"from", "URL",
       "export-index: farmd's HTTP address, e.g. http://farm:8080 (default: asked of the farmd "
       "--server names)"},
      {"base-url", "URL", "export-index: the URL DIR will be served at (default: relative links)"},
      {"index", "NAME|URL",
       "cache add: the upstream index wheels and sdists go to (default: farmd's only one)"},
      {"tree", "NAME", "cache add: the upstream tree (redist) manifests and archives go to"},
      {"manifest", "FILE|NAME",
       "cache add: the redist manifest listing the archives (a FILE is added first)"},
      {"help", "", "show this help"},
  };
  for (const FlagSpec& f : net::ClientTlsFlags()) specs.push_back(f);
  return specs;
}

}  // namespace farm::cli
