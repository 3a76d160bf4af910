// The pure parts of validation (declared in validation.h): GPU choice, exit codes and the
// script's JSON report.
#include <boost/json.hpp>
#include <cstdio>

#include "worker/validate/validation.h"

namespace farm::agent {
namespace {

namespace json = boost::json;

std::string CcOf(const farm::v1::Gpu& gpu) {
  return std::to_string(gpu.cc_major()) + "." + std::to_string(gpu.cc_minor());
}

std::string StringField(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : "";
}

// Numbers may be null (non-finite) or absent: both read as 0 and the case's own `passed`
// carries the verdict.
double NumberField(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr) return 0;
  if (v->is_double()) return v->get_double();
  if (v->is_int64()) return static_cast<double>(v->get_int64());
  if (v->is_uint64()) return static_cast<double>(v->get_uint64());
  return 0;
}

// The baseline a v1 report names: its "baseline.impl" with the case's (or the report's
// headline) dtype, e.g. "torch SDPA float16".
std::string V1BaselineName(const json::object& root, const json::object& c) {
  const json::value* b = root.if_contains("baseline");
  std::string impl = b != nullptr && b->is_object() ? StringField(b->get_object(), "impl") : "";
  std::string dtype = StringField(c, "baseline_dtype");
  if (dtype.empty() && b != nullptr && b->is_object()) {
    dtype = StringField(b->get_object(), "headline_dtype");
  }
  if (impl.empty()) impl = "baseline";
  return dtype.empty() ? impl : impl + " " + dtype;
}

// Throughput, its unit and the named baseline (schema v2), or from a v1 case's attention
// TOPS when the case has no throughput of its own.
void SetThroughput(const json::object& root, const json::object& c, farm::v1::ValidationCase* out) {
  out->set_throughput(NumberField(c, "throughput"));
  out->set_throughput_unit(StringField(c, "throughput_unit"));
  out->set_baseline_throughput(NumberField(c, "baseline_throughput"));
  out->set_baseline(StringField(c, "baseline_name"));
  if (out->throughput_unit().empty() && out->throughput() == 0 && out->tops() > 0) {
    out->set_throughput(out->tops());
    out->set_throughput_unit("TOPS");
    out->set_baseline_throughput(out->baseline_tops());
  }
  if (out->baseline().empty() && out->baseline_throughput() > 0) {
    out->set_baseline(V1BaselineName(root, c));
  }
}

void AddCases(const json::object& root, farm::v1::ValidationReport* report) {
  const json::value* cases = root.if_contains("cases");
  if (cases == nullptr || !cases->is_array()) return;
  for (const json::value& c : cases->get_array()) {
    if (!c.is_object()) continue;
    const json::object& o = c.get_object();
    farm::v1::ValidationCase* out = report->add_cases();
    out->set_name(StringField(o, "name"));
    out->set_cosine(NumberField(o, "cosine"));
    out->set_relative_l1(NumberField(o, "relative_l1"));
    out->set_rmse(NumberField(o, "rmse"));
    out->set_tops(NumberField(o, "tops"));
    out->set_baseline_tops(NumberField(o, "baseline_tops"));
    out->set_implementation(StringField(o, "implementation"));
    out->set_fast_implementation(StringField(o, "fast_implementation"));
    SetThroughput(root, o, out);
    const json::value* passed = o.if_contains("passed");
    out->set_passed(passed != nullptr && passed->is_bool() && passed->get_bool());
  }
}

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

void ApplySpeedThreshold(double min_speedup, farm::v1::ValidationReport* report) {
  if (min_speedup <= 0 || report->state() != farm::v1::VALIDATION_PASSED) return;
  for (const farm::v1::ValidationCase& c : report->cases()) {
    if (c.throughput() <= 0 || c.baseline_throughput() <= 0) continue;
    double speedup = c.throughput() / c.baseline_throughput();
    if (speedup >= min_speedup) continue;
    report->set_state(farm::v1::VALIDATION_FAILED);
    report->set_message("case " + c.name() + " ran at " + Number(speedup) + "x " + c.baseline() +
                        " (" + Number(c.throughput()) + " vs " + Number(c.baseline_throughput()) +
                        " " + c.throughput_unit() + "); the recipe asks for at least " +
                        Number(min_speedup) + "x");
    return;
  }
}

void ApplyFastPathRequirement(bool required, farm::v1::ValidationReport* report) {
  if (!required || report->state() != farm::v1::VALIDATION_PASSED) return;
  std::string first;
  for (farm::v1::ValidationCase& c : *report->mutable_cases()) {
    std::string why;
    if (c.implementation().empty() || c.fast_implementation().empty()) {
      why = "case " + c.name() + " does not say which implementation it ran and which is " +
            "the fast one (implementation, fast_implementation: kernels/VALIDATION.md); " +
            "the recipe requires the fast path";
    } else if (c.implementation() != c.fast_implementation()) {
      why = "case " + c.name() + " ran the fallback " + c.implementation() + ", not the fast " +
            c.fast_implementation() + " this GPU has; the recipe requires the fast path";
    } else {
      continue;
    }
    c.set_passed(false);
    if (first.empty()) first = std::move(why);
  }
  if (report->cases_size() == 0) {
    first = "the report has no cases to show the fast path ran; the recipe requires it";
  }
  if (first.empty()) return;
  report->set_state(farm::v1::VALIDATION_FAILED);
  report->set_message(first);
}

std::optional<farm::v1::Gpu> ChooseValidationGpu(const farm::v1::Capabilities& caps,
                                                 const farm::v1::ArchManifest& manifest) {
  if (caps.gpus_size() == 0) return std::nullopt;
  if (manifest.images_size() == 0) return caps.gpus(0);
  for (const farm::v1::Gpu& gpu : caps.gpus()) {
    for (const std::string& cc : manifest.runs_on()) {
      if (cc == CcOf(gpu)) return gpu;
    }
  }
  return std::nullopt;
}

std::string NoGpuReason(const farm::v1::Capabilities& caps,
                        const farm::v1::ArchManifest& manifest) {
  std::string serves;
  for (const std::string& cc : manifest.runs_on()) serves += (serves.empty() ? "" : ", ") + cc;
  if (serves.empty()) serves = "none";
  if (caps.gpus_size() == 0) {
    return "this worker has no GPU; the wheel needs compute capability " + serves;
  }
  std::string here;
  for (const farm::v1::Gpu& gpu : caps.gpus()) {
    here += (here.empty() ? "" : ", ") + gpu.name() + " (cc " + CcOf(gpu) + ")";
  }
  return "no GPU here serves the wheel: it runs on cc " + serves + ", this worker has " + here;
}

farm::v1::ValidationState StateForExitCode(int exit_code) {
  switch (exit_code) {
    case 0:
      return farm::v1::VALIDATION_PASSED;
    case 3:
    case 5:
      return farm::v1::VALIDATION_PENDING_HARDWARE;
    default:
      return farm::v1::VALIDATION_FAILED;
  }
}

farm::v1::ValidationReport ParseValidationReport(const std::string& json_text, int exit_code) {
  farm::v1::ValidationReport report;
  report.set_state(StateForExitCode(exit_code));
  boost::system::error_code ec;
  json::value root = json::parse(json_text, ec);
  if (ec || !root.is_object()) {
    report.set_message("validation script exited with code " + std::to_string(exit_code) +
                       " without a readable report" +
                       (json_text.empty() ? "" : " (" + ec.message() + ")"));
    return report;
  }
  const json::object& o = root.get_object();
  report.set_gpu_name(StringField(o, "gpu_name"));
  report.set_compute_capability(StringField(o, "compute_capability"));
  std::string message = StringField(o, "message");
  if (message.empty()) message = "validation script exited with code " + std::to_string(exit_code);
  report.set_message(message);
  AddCases(o, &report);
  return report;
}

}  // namespace farm::agent
