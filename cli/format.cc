#include "cli/format.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <optional>
#include <sstream>

#include "common/fs.h"
#include "common/recipe/matrix.h"
#include "common/strings.h"
#include "common/utf8.h"
#include "common/wheel/job_check.h"
#include "common/wheel/wheel_bytes.h"

namespace farm::cli {
namespace {

using fs::HumanBytes;

// "cache 12 hits / 0 misses (100%)" for an attempt line.
std::string CacheText(const farm::v1::CompileCacheStats& c) {
  std::ostringstream o;
  o << "cache " << c.hits() << " hits / " << c.misses() << " misses";
  if (c.hits() + c.misses() > 0) o << " (" << c.hits() * 100 / (c.hits() + c.misses()) << "%)";
  return o.str();
}

std::string Figure(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v >= 100 ? "%.1f" : "%.3g", v);
  return buf;
}

// One validation case: "b1_h32_n16384_d128 passed: cosine 0.99925, rel. L1 0.0387, 718.0
// TOPS vs 588.9 (torch SDPA float16, 1.22x)". A report stored before throughput had a unit
// shows its attention TOPS.
std::string CaseText(const farm::v1::ValidationCase& c) {
  std::ostringstream o;
  o << c.name() << (c.passed() ? " passed" : " FAILED") << ": cosine " << Figure(c.cosine())
    << ", rel. L1 " << Figure(c.relative_l1());
  bool legacy = c.throughput_unit().empty() && c.throughput() == 0;
  double throughput = legacy ? c.tops() : c.throughput();
  double baseline = legacy ? c.baseline_tops() : c.baseline_throughput();
  std::string unit = legacy ? "TOPS" : c.throughput_unit();
  if (throughput > 0) o << ", " << Figure(throughput) << " " << unit;
  if (throughput > 0 && baseline > 0) {
    o << " vs " << Figure(baseline) << " (" << (c.baseline().empty() ? "baseline" : c.baseline())
      << ", " << Figure(throughput / baseline) << "x)";
  }
  // Which implementation ran, when the script says: a fallback names the fast one too.
  if (!c.implementation().empty()) {
    o << ", ran " << c.implementation();
    if (!c.fast_implementation().empty() && c.fast_implementation() != c.implementation()) {
      o << " (fallback; fast: " << c.fast_implementation() << ")";
    }
  }
  return o.str();
}

std::string ValidationText(const farm::v1::ValidationReport& v) {
  if (v.state() == farm::v1::VALIDATION_STATE_UNSPECIFIED) return "";
  std::ostringstream o;
  o << "      validation: " << EnumWord(farm::v1::ValidationState_Name(v.state()), "VALIDATION_");
  if (!v.gpu_name().empty()) {
    o << " on " << v.gpu_name();
    if (!v.compute_capability().empty()) o << " (cc " << v.compute_capability() << ")";
  }
  if (!v.message().empty()) o << ": " << v.message();
  o << "\n";
  for (const auto& c : v.cases()) o << "        " << CaseText(c) << "\n";
  return o.str();
}

}  // namespace

std::string EnumWord(std::string_view name, std::string_view prefix) {
  if (name.starts_with(prefix)) name.remove_prefix(prefix.size());
  return AsciiLower(name);
}

std::string StateName(farm::v1::BuildState s) {
  return EnumWord(farm::v1::BuildState_Name(s), "BUILD_");
}
std::string StateName(farm::v1::JobState s) { return EnumWord(farm::v1::JobState_Name(s), "JOB_"); }
std::string CauseName(farm::v1::AttemptCause c) {
  return c == farm::v1::ATTEMPT_CAUSE_UNSPECIFIED
             ? "running"
             : EnumWord(farm::v1::AttemptCause_Name(c), "CAUSE_");
}

std::string CellLabel(const farm::v1::MatrixCell& c) {
  std::string s;
  if (!c.python().empty()) s += "py" + c.python();
  if (!c.torch().empty()) s += " torch" + c.torch();
  if (!c.cuda().empty()) s += " cuda" + c.cuda();
  if (!c.platform().empty()) s += " " + c.platform();
  if (!c.arch_list().empty()) s += " [" + c.arch_list() + "]";
  return s.empty() ? "(default)" : s;
}

namespace {

// Milliseconds since the epoch of "2025-11-26T16:02:03.123Z" (RFC 3339 in UTC, as farmd
// writes it); 0 when empty or malformed.
int64_t ParseRfc3339(const std::string& text) {
  std::tm tm{};
  int ms = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ", &tm.tm_year, &tm.tm_mon,
                  &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) < 6) {
    return 0;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<int64_t>(timegm(&tm)) * 1000 + ms;
}

// "45s", "3m 2s", "2h 5m".
std::string Duration(int64_t ms) {
  int64_t s = std::max<int64_t>(0, ms) / 1000;
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return std::to_string(s / 60) + "m " + std::to_string(s % 60) + "s";
  return std::to_string(s / 3600) + "h " + std::to_string(s % 3600 / 60) + "m";
}

bool Unfinished(farm::v1::BuildState s) {
  return s == farm::v1::BUILD_QUEUED || s == farm::v1::BUILD_RUNNING;
}

// "blocked" for an unfinished build whose every unfinished build job is pending and no
// worker can take (as the dashboard says); else the build's state.
std::string ListedState(const farm::v1::Build& b) {
  int unfinished = 0, stuck = 0;
  for (const auto& j : b.jobs()) {
    if (j.kind() == farm::v1::JOB_VALIDATE || j.state() >= farm::v1::JOB_SUCCEEDED) continue;
    ++unfinished;
    stuck += j.state() == farm::v1::JOB_PENDING && j.unplaceable();
  }
  return Unfinished(b.state()) && unfinished > 0 && stuck == unfinished ? "blocked"
                                                                        : StateName(b.state());
}

// "3 jobs (1 validation): 1 ok, 2 failed": each state counted, as the dashboard counts.
std::string JobCounts(const farm::v1::Build& b) {
  int ok = 0, running = 0, queued = 0, no_worker = 0, failed = 0, cancelled = 0, validations = 0;
  for (const auto& j : b.jobs()) {
    validations += j.kind() == farm::v1::JOB_VALIDATE;
    switch (j.state()) {
      case farm::v1::JOB_SUCCEEDED:
        ++ok;
        break;
      case farm::v1::JOB_RUNNING:
        ++running;
        break;
      case farm::v1::JOB_PENDING:
        ++(j.unplaceable() ? no_worker : queued);
        break;
      case farm::v1::JOB_FAILED:
        ++failed;
        break;
      case farm::v1::JOB_CANCELLED:
        ++cancelled;
        break;
      default:
        break;
    }
  }
  std::string out = std::to_string(b.jobs_size()) + (b.jobs_size() == 1 ? " job" : " jobs");
  if (validations > 0) {
    out +=
        " (" + std::to_string(validations) + (validations == 1 ? " validation)" : " validations)");
  }
  std::string parts;
  for (const auto& [n, what] : {std::pair{ok, "ok"},
                                {running, "running"},
                                {queued, "queued"},
                                {no_worker, "no worker"},
                                {failed, "failed"},
                                {cancelled, "cancelled"}}) {
    if (n > 0) parts += (parts.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  }
  return parts.empty() ? out : out + ": " + parts;
}

// "py3.11 cuda12.8,13.0 [9.0;12.0a;12.1a]": the values of each axis over the build's
// jobs, so builds of one recipe can be told apart.
std::string CellsSummary(const farm::v1::Build& b) {
  std::vector<std::string> python, torch, cuda, archs;
  auto add = [](std::vector<std::string>& to, const std::string& v) {
    if (!v.empty() && std::find(to.begin(), to.end(), v) == to.end()) to.push_back(v);
  };
  for (const auto& j : b.jobs()) {
    if (j.kind() == farm::v1::JOB_VALIDATE) continue;
    add(python, j.cell().python()), add(torch, j.cell().torch()), add(cuda, j.cell().cuda());
    add(archs, j.cell().arch_list());
  }
  auto join = [](const std::vector<std::string>& v, const char* sep) {
    std::string out;
    for (const auto& x : v) out += (out.empty() ? "" : sep) + x;
    return out;
  };
  std::string out;
  for (const auto& [prefix, values] :
       {std::pair{"py", &python}, {"torch", &torch}, {"cuda", &cuda}}) {
    if (!values->empty())
      out += (out.empty() ? "" : " ") + std::string(prefix) + join(*values, ",");
  }
  if (!archs.empty()) out += (out.empty() ? "[" : " [") + join(archs, "] [") + "]";
  return out.empty() ? "(default)" : out;
}

}  // namespace

std::string FormatBuildList(const std::vector<farm::v1::Build>& builds, int64_t now_ms) {
  std::vector<std::vector<std::string>> rows = {
      {"BUILD", "RECIPE", "OWNER", "STATE", "JOBS", "CELLS", "CREATED", "DURATION"}};
  for (const auto& b : builds) {
    int64_t created = ParseRfc3339(b.created_at());
    int64_t finished = ParseRfc3339(b.finished_at());
    std::string duration = created == 0   ? ""
                           : finished > 0 ? Duration(finished - created)
                                          : "for " + Duration(now_ms - created);
    std::string when = b.created_at();
    if (size_t dot = when.find('.'); dot != std::string::npos) when = when.substr(0, dot) + "Z";
    rows.push_back({std::to_string(b.id()), b.recipe_name(), b.owner(), ListedState(b),
                    JobCounts(b), CellsSummary(b), when, duration});
  }
  return AlignColumns(rows);
}

std::string AlignColumns(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows) {
    if (width.size() < r.size()) width.resize(r.size(), 0);
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(width[i] - r[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string WorkerLabel(const std::string& name, const std::string& id) {
  return name.empty() ? id : name;
}

std::string ValidationLabel(const farm::v1::Job& j) {
  if (j.kind() != farm::v1::JOB_VALIDATE) return "";
  return "validation of job " + std::to_string(j.target_job_id()) + " attempt " +
         std::to_string(j.target_attempt());
}

std::string FormatWaiting(const farm::v1::Job& j) {
  if (j.state() != farm::v1::JOB_PENDING || j.waiting_reason().empty()) return "";
  std::string out = j.waiting_reason() + (j.unplaceable() ? " (no worker can take it)" : "");
  for (const auto& [worker, why] : j.unplaceable_reasons()) out += "\n  " + worker + ": " + why;
  return out;
}

std::string FormatProgress(const farm::v1::Job& j) {
  if (j.state() != farm::v1::JOB_RUNNING) return "";
  const farm::v1::Attempt* current = nullptr;
  for (const auto& a : j.attempts()) {
    if (a.number() == j.attempt()) current = &a;
  }
  if (current == nullptr) return "";
  std::ostringstream o;
  if (current->units_total() > 0) {
    o << current->units_done() << "/" << current->units_total() << " units ("
      << current->units_done() * 100 / current->units_total() << "%)";
  } else if (current->units_done() > 0) {
    o << current->units_done() << (current->units_done() == 1 ? " compile" : " compiles")
      << " done";
  }
  if (current->peak_rss_bytes() > 0) {
    o << (o.tellp() > 0 ? ", " : "") << "peak RSS " << HumanBytes(current->peak_rss_bytes());
  }
  return o.str();
}

namespace {

// Which jobs this one consumes (and the wheels it was given) and which consume it.
std::string GraphText(const farm::v1::Job& j) {
  std::ostringstream o;
  for (const auto& in : j.inputs()) {
    o << "    requires " << in.recipe_name() << " job " << in.job_id() << " (build "
      << in.build_id() << ", " << StateName(in.state()) << ") for "
      << (in.for_build() && in.for_validation() ? "build and validation"
          : in.for_build()                      ? "the build"
                                                : "validation")
      << "\n";
    for (const auto& a : in.artifacts()) {
      o << "      consumed " << a.filename() << "  sha256 " << a.sha256() << "\n";
    }
  }
  for (const auto& c : j.consumers()) {
    o << "    required by " << c.recipe_name() << " job " << c.job_id() << " (build "
      << c.build_id() << ", " << StateName(c.state()) << ")\n";
  }
  return o.str();
}

// A stable-ABI build: the torches its wheel was proven with, and how each cell fared.
std::string ProofText(const farm::v1::Job& j) {
  if (j.torch_proofs_size() == 0) return "";
  std::ostringstream o;
  o << "    proven with torch ";
  for (int i = 0; i < j.proven_torch_size(); ++i) o << (i ? ", " : "") << j.proven_torch(i);
  if (j.proven_torch_size() == 0) o << "(none yet)";
  o << "\n";
  for (const auto& p : j.torch_proofs()) {
    o << "      torch " << p.cell().torch() << " (Python " << p.cell().python() << ", CUDA "
      << p.cell().cuda() << "): " << EnumWord(farm::v1::ProofState_Name(p.state()), "PROOF_");
    if (p.job_id() > 0) o << " (job " << p.job_id() << ")";
    if (!p.detail().empty()) o << " - " << p.detail();
    o << "\n";
  }
  return o.str();
}

}  // namespace

std::string FormatLockInfo(const farm::v1::LockInfo& info) {
  std::ostringstream o;
  if (!info.torch().empty()) o << "torch " << info.torch() << ", ";
  o << "lock " << info.digest().substr(0, 12) << ": " << info.packages() << " packages, "
    << HumanBytes(info.bytes());
  if (info.previous_job_id() > 0) {
    o << "; since job " << info.previous_job_id() << ": ";
    if (info.changes().empty()) o << "unchanged";
    for (int i = 0; i < info.changes_size(); ++i) o << (i ? ", " : "") << info.changes(i);
  }
  return o.str();
}

std::string FormatJob(const farm::v1::Job& j) {
  std::ostringstream o;
  o << "  job " << j.id() << "  " << CellLabel(j.cell()) << "  " << StateName(j.state());
  if (j.kind() == farm::v1::JOB_VALIDATE) o << "  " << ValidationLabel(j);
  if (!j.worker_id().empty()) o << "  on " << WorkerLabel(j.worker_name(), j.worker_id());
  if (j.attempt() > 0) o << "  attempt " << j.attempt();
  o << "\n";
  if (!j.error().empty()) o << "    error: " << j.error() << "\n";
  for (const auto& line : j.failure_lines()) o << "      | " << line << "\n";
  if (!j.cancelled_by().empty() && j.error() != "cancelled by " + j.cancelled_by()) {
    o << "    cancelled by " << j.cancelled_by() << "\n";
  }
  if (j.reused_from() > 0)
    o << "    answered from the store: wheels of job " << j.reused_from() << "\n";
  if (j.has_lock()) o << "    environment: " << FormatLockInfo(j.lock()) << "\n";
  for (const auto& line : j.cell_settings()) o << "    cell settings: " << line << "\n";
  for (const auto& a : j.attempts()) {
    o << "    attempt " << a.number() << " on " << WorkerLabel(a.worker_name(), a.worker_id())
      << ": " << CauseName(a.cause());
    // A cancelled, lost or timed-out attempt has no exit code worth showing: "(exit 0)"
    // would read as a success.
    bool exited = a.cause() == farm::v1::CAUSE_COMPLETED ||
                  a.cause() == farm::v1::CAUSE_BUILD_FAILED ||
                  a.cause() == farm::v1::CAUSE_VALIDATION_FAILED;
    // -1: no command ran to an exit (a provisioning failure, a wheel the checks refused).
    if (exited && a.exit_code() >= 0) o << " (exit " << a.exit_code() << ")";
    if (a.peak_rss_bytes() > 0) o << ", peak RSS " << HumanBytes(a.peak_rss_bytes());
    if (a.has_compile_cache()) o << ", " << CacheText(a.compile_cache());
    if (!a.detail().empty()) o << " - " << a.detail();
    o << "\n";
  }
  for (const auto& a : j.artifacts()) {
    o << "    artifact " << a.id() << ": " << a.filename() << "  " << HumanBytes(a.size())
      << "  sha256 " << a.sha256() << "\n";
    std::string ignored = wheel::ArchListIgnoredMessage(j.cell().arch_list(), a.manifest());
    if (!ignored.empty()) o << "      warning: " << ignored << "\n";
    o << wheel::FormatWheelBytes(a.manifest(), "      ");
    o << ValidationText(a.validation());
  }
  o << GraphText(j);
  o << ProofText(j);
  if (!j.waiting_reason().empty()) {
    o << "    waiting: " << j.waiting_reason()
      << (j.unplaceable() ? " (no worker can take it)" : "") << "\n";
  }
  for (const auto& [worker, why] : j.unplaceable_reasons()) {
    o << "    cannot run on " << worker << ": " << why << "\n";
  }
  if (std::string progress = FormatProgress(j); !progress.empty()) {
    o << "    progress: " << progress << "\n";
  }
  return o.str();
}

std::string FormatBuild(const farm::v1::Build& b) {
  std::ostringstream o;
  o << "build " << b.id() << "  " << b.recipe_name() << "  " << StateName(b.state()) << "\n"
    << "  owner " << b.owner() << ", submitted " << b.created_at() << " by " << b.submitted_by();
  if (!b.finished_at().empty()) o << ", finished " << b.finished_at();
  o << "\n";
  if (std::string followed = recipe::DescribeTorchFollow(b.recipe()); !followed.empty()) {
    o << "  " << followed << " (what the indexes had when it was submitted)\n";
  }
  for (const auto& r : b.rejected_cells()) o << "  rejected cell: " << r << "\n";
  for (const auto& j : b.jobs()) o << FormatJob(j);
  return o.str();
}

namespace {

// " 3.11 3.12": each distinct value once, in the order first seen.
std::string DistinctList(const std::vector<std::string>& values) {
  std::vector<std::string> seen;
  std::string out;
  for (const auto& v : values) {
    if (std::find(seen.begin(), seen.end(), v) != seen.end()) continue;
    seen.push_back(v);
    out += " " + v;
  }
  return out;
}

}  // namespace

std::string WorkersHeader() {
  return "ID\tNAME\tSTATE\tPLATFORM\tGPUS\tCUDA\tPYTHON\tENVIRONMENTS\tLAST HEARTBEAT";
}

std::string FormatWorker(const farm::v1::WorkerInfo& w) {
  const auto& c = w.capabilities();
  std::ostringstream o;
  o << w.id() << "\t" << w.name() << "\t" << w.state() << "\t" << c.platform()
    << (c.wsl2() ? " (WSL2)" : "") << "\t";
  if (c.gpus_size() == 0) o << "no GPU";
  for (int i = 0; i < c.gpus_size(); ++i) {
    o << (i ? ", " : "") << c.gpus(i).name() << " (" << c.gpus(i).cc_major() << "."
      << c.gpus(i).cc_minor() << (c.gpus(i).unified_memory() ? ", unified memory" : "") << ")";
  }
  // One version found several ways (/usr/bin/python3 and python3.11) is shown once.
  std::vector<std::string> cuda, python;
  for (const auto& t : c.toolkits()) cuda.push_back(t.version());
  for (const auto& p : c.pythons()) python.push_back(p.version());
  o << "\tCUDA" << DistinctList(cuda) << "\tPython" << DistinctList(python);
  if (!c.provisioning().enabled()) o << "\tdoes not provision";
  if (c.provisioning().enabled()) {
    const auto& p = c.provisioning();
    o << "\tprovisions"
      << (p.fetches_toolkits()        ? " (fetches CUDA)"
          : p.toolkits_through_farm() ? " (fetches no CUDA: farmd serves no redist tree)"
                                      : "")
      << ", env cache " << fs::HumanBytes(c.provisioning().cache_bytes()) << " of "
      << fs::HumanBytes(c.provisioning().cache_max_bytes());
  }
  o << "\tlast heartbeat " << w.last_heartbeat();
  if (!c.probe_error().empty()) o << "\tquarantined: " << c.probe_error();
  if (!c.gpu_driver_error().empty()) o << "\t" << c.gpu_driver_error();
  return o.str();
}

std::string FormatLogLine(const farm::v1::LogLine& l, bool prefix_job) {
  std::string prefix = prefix_job ? "[job " + std::to_string(l.job_id()) + "] " : "";
  if (l.stream() == farm::v1::STDERR) prefix += "! ";
  return prefix + l.text();
}

namespace {

namespace json = boost::json;
using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

bool Is64BitInteger(const FieldDescriptor* f) {
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT64:
    case FieldDescriptor::CPPTYPE_UINT64:
      return true;
    default:
      return false;
  }
}

// The proto3 JSON mapping writes 64-bit integers as strings; a script reading farmctl's
// output wants numbers. Walks the message's descriptor alongside its JSON and turns those
// strings back into numbers (nested messages, repeated fields and map values too).
void NumbersAsNumbers(const Descriptor* d, json::value& v);

// Ids that the API carries as strings but every other listing (the dashboard's JSON,
// build and job ids) shows as numbers: printed as numbers too.
bool IsNumericId(const FieldDescriptor* f) {
  const std::string& name = f->full_name();
  return name == "farm.v1.Schedule.id" || name == "farm.v1.ScheduleRun.schedule_id" ||
         name == "farm.v1.Build.schedule_id";
}

// The bytes of a base64 text (RFC 4648, as the proto3 JSON mapping writes bytes fields);
// nullopt when it is not base64.
std::optional<std::string> Base64Decode(std::string_view text) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int v = c >= 'A' && c <= 'Z'   ? c - 'A'
            : c >= 'a' && c <= 'z' ? c - 'a' + 26
            : c >= '0' && c <= '9' ? c - '0' + 52
            : c == '+' || c == '-' ? 62
            : c == '/' || c == '_' ? 63
                                   : -1;
    if (c == '=') break;
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

void FixValue(const FieldDescriptor* f, json::value& v) {
  if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
    NumbersAsNumbers(f->message_type(), v);
    return;
  }
  if (!v.is_string()) return;
  if (f->type() == FieldDescriptor::TYPE_BYTES) {  // a script, a patch: text, not base64
    std::optional<std::string> bytes = Base64Decode(v.as_string());
    if (bytes && IsValidUtf8(*bytes)) v = *bytes;
    return;
  }
  if (IsNumericId(f)) {
    const std::string s(v.as_string());
    if (!s.empty() && s.size() < 19 && s.find_first_not_of("0123456789") == std::string::npos) {
      v = static_cast<std::int64_t>(std::stoll(s));
    }
    return;
  }
  if (!Is64BitInteger(f)) return;
  const std::string s(v.as_string());
  try {
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_INT64) {
      v = static_cast<std::int64_t>(std::stoll(s));
    } else {
      v = static_cast<std::uint64_t>(std::stoull(s));
    }
  } catch (const std::exception&) {
  }
}

void NumbersAsNumbers(const Descriptor* d, json::value& v) {
  if (!v.is_object()) return;
  for (auto& [key, value] : v.as_object()) {
    const FieldDescriptor* f = d->FindFieldByName(std::string(key));
    if (f == nullptr) continue;
    if (f->is_map()) {
      const FieldDescriptor* mapped = f->message_type()->FindFieldByName("value");
      if (value.is_object()) {
        for (auto& [k, item] : value.as_object()) FixValue(mapped, item);
      }
    } else if (f->is_repeated()) {
      if (value.is_array()) {
        for (auto& item : value.as_array()) FixValue(f, item);
      }
    } else {
      FixValue(f, value);
    }
  }
}

}  // namespace

std::string ToJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(m, &out, opts).ok()) return "{}";
  json::error_code ec;
  json::value v = json::parse(out, ec);
  if (ec) return out;
  NumbersAsNumbers(m.GetDescriptor(), v);
  return json::serialize(v);
}

}  // namespace farm::cli
