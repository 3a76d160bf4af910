#include "daemon/cli/format.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <cstdio>
#include <sstream>

#include "common/fs.h"
#include "common/wheel/job_check.h"

namespace farm::cli {
namespace {

using fs::HumanBytes;

std::string Lower(std::string s, const std::string& strip_prefix) {
  if (s.rfind(strip_prefix, 0) == 0) s = s.substr(strip_prefix.size());
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

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
  return o.str();
}

std::string ValidationText(const farm::v1::ValidationReport& v) {
  if (v.state() == farm::v1::VALIDATION_STATE_UNSPECIFIED) return "";
  std::ostringstream o;
  o << "      validation: " << Lower(farm::v1::ValidationState_Name(v.state()), "VALIDATION_");
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

std::string StateName(farm::v1::BuildState s) {
  return Lower(farm::v1::BuildState_Name(s), "BUILD_");
}
std::string StateName(farm::v1::JobState s) { return Lower(farm::v1::JobState_Name(s), "JOB_"); }
std::string CauseName(farm::v1::AttemptCause c) {
  return c == farm::v1::ATTEMPT_CAUSE_UNSPECIFIED ? "running"
                                                  : Lower(farm::v1::AttemptCause_Name(c), "CAUSE_");
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

std::string FormatBuildLine(const farm::v1::Build& b) {
  int done = 0, validations = 0;
  for (const auto& j : b.jobs()) {
    done += j.state() >= farm::v1::JOB_SUCCEEDED;
    validations += j.kind() == farm::v1::JOB_VALIDATE;
  }
  std::ostringstream o;
  o << b.id() << "\t" << b.recipe_name() << "\t" << StateName(b.state()) << "\t" << done << "/"
    << b.jobs_size() << " jobs";
  if (validations > 0)
    o << " (" << validations << (validations == 1 ? " validation)" : " validations)");
  o << "\t" << b.created_at() << "\towner " << b.owner();
  return o.str();
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
          : in.for_build()                       ? "the build"
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

}  // namespace

std::string FormatJob(const farm::v1::Job& j) {
  std::ostringstream o;
  o << "  job " << j.id() << "  " << CellLabel(j.cell()) << "  " << StateName(j.state());
  if (j.kind() == farm::v1::JOB_VALIDATE) o << "  " << ValidationLabel(j);
  if (!j.worker_id().empty()) o << "  on " << WorkerLabel(j.worker_name(), j.worker_id());
  if (j.attempt() > 0) o << "  attempt " << j.attempt();
  o << "\n";
  if (!j.error().empty()) o << "    error: " << j.error() << "\n";
  if (!j.cancelled_by().empty()) o << "    cancelled by " << j.cancelled_by() << "\n";
  if (j.reused_from() > 0) o << "    answered from the store: wheels of job " << j.reused_from() << "\n";
  for (const auto& a : j.attempts()) {
    o << "    attempt " << a.number() << " on " << WorkerLabel(a.worker_name(), a.worker_id())
      << ": " << CauseName(a.cause());
    // A cancelled, lost or timed-out attempt has no exit code worth showing: "(exit 0)"
    // would read as a success.
    bool exited = a.cause() == farm::v1::CAUSE_COMPLETED ||
                  a.cause() == farm::v1::CAUSE_BUILD_FAILED ||
                  a.cause() == farm::v1::CAUSE_VALIDATION_FAILED;
    if (exited) o << " (exit " << a.exit_code() << ")";
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
    o << ValidationText(a.validation());
  }
  o << GraphText(j);
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
  for (const auto& r : b.rejected_cells()) o << "  rejected cell: " << r << "\n";
  for (const auto& j : b.jobs()) o << FormatJob(j);
  return o.str();
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
  o << "\tCUDA";
  for (const auto& t : c.toolkits()) o << " " << t.version();
  o << "\tPython";
  for (const auto& p : c.pythons()) o << " " << p.version();
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

void FixValue(const FieldDescriptor* f, json::value& v) {
  if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
    NumbersAsNumbers(f->message_type(), v);
    return;
  }
  if (!Is64BitInteger(f) || !v.is_string()) return;
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
