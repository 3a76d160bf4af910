#include "worker/probe/probe_kernels.h"

#include <boost/json.hpp>

#include "common/arch.h"
#include "common/fs.h"
#include "common/log.h"

namespace farm::agent {
namespace {

constexpr int64_t kCompileTimeoutMs = 5 * 60 * 1000;
constexpr int64_t kRunTimeoutMs = 60 * 1000;

std::string GpuText(const farm::v1::Gpu& gpu) {
  return "GPU " + std::to_string(gpu.index()) + " (" + gpu.name() + ", cc " +
         std::to_string(gpu.cc_major()) + "." + std::to_string(gpu.cc_minor()) + ")";
}

// The probe prints one JSON line; its "message" says what went wrong.
std::string ProbeMessage(const std::string& out) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(out, ec);
  if (!ec && v.is_object()) {
    if (const auto* m = v.get_object().if_contains("message"); m != nullptr && m->is_string()) {
      return std::string(m->get_string());
    }
  }
  return out.substr(0, 300);
}

bool VersionLess(const std::string& a, const std::string& b) {
  auto va = arch::ParseVersion(a);
  auto vb = arch::ParseVersion(b);
  if (!va.ok() || !vb.ok()) return !va.ok() && vb.ok();
  return *va < *vb;
}

std::string LastLine(const std::string& text) {
  size_t end = text.find_last_not_of("\n ");
  if (end == std::string::npos) return "";
  size_t start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1, end - start);
}

// Compiles and runs the probe on one GPU. On success returns the probe's message.
Result<std::string> ProveGpu(ProcessRunner& runner, const farm::v1::Gpu& gpu,
                             const farm::v1::CudaToolkit& toolkit, const std::string& dir) {
  std::string num = std::to_string(gpu.cc_major()) + std::to_string(gpu.cc_minor());
  std::string binary = dir + "/probe_sm" + num;
  ProcessSpec compile{
      .argv = {toolkit.path() + "/bin/nvcc", "-O2", "-std=c++17", "-gencode",
               "arch=compute_" + num + ",code=sm_" + num, "-o", binary, dir + "/probe.cu"},
      .cwd = dir};
  FARM_ASSIGN_OR_RETURN(CapturedOutput built, RunAndCapture(runner, compile, kCompileTimeoutMs));
  if (built.result.exit_code != 0) {
    return Status::FailedPrecondition("nvcc " + toolkit.version() + " could not compile sm_" + num +
                                      ": " + LastLine(built.err + built.out));
  }
  ProcessSpec run{.argv = {binary, "--device", std::to_string(gpu.index())}, .cwd = dir};
  FARM_ASSIGN_OR_RETURN(CapturedOutput ran, RunAndCapture(runner, run, kRunTimeoutMs));
  std::string message = ProbeMessage(LastLine(ran.out));
  if (ran.result.exit_code != 0) {
    return Status::FailedPrecondition("exit code " + std::to_string(ran.result.exit_code) + ": " +
                                      message);
  }
  return message;
}

}  // namespace

std::optional<farm::v1::CudaToolkit> ToolkitFor(const farm::v1::Capabilities& caps,
                                                const std::string& code) {
  std::optional<farm::v1::CudaToolkit> best;
  for (const farm::v1::CudaToolkit& t : caps.toolkits()) {
    bool emits = false;
    for (const std::string& c : t.gpu_codes()) emits |= c == code;
    if (emits && (!best || VersionLess(best->version(), t.version()))) best = t;
  }
  return best;
}

ProbeKernelVerdict RunProbeKernels(ProcessRunner& runner, const farm::v1::Capabilities& caps,
                                   const std::string& work_dir) {
  ProbeKernelVerdict verdict;
  if (caps.gpus_size() == 0 || caps.toolkits_size() == 0) {
    verdict.summary =
        caps.gpus_size() == 0 ? "no GPU to probe" : "no CUDA toolkit: GPUs not probed";
    return verdict;
  }
  verdict.ran = true;
  if (Status s = fs::MakeDirs(work_dir); !s.ok()) {
    verdict.error = "probe kernels: " + s.message();
    return verdict;
  }
  if (Status s = fs::WriteFileAtomic(work_dir + "/probe.cu", ProbeKernelSource()); !s.ok()) {
    verdict.error = "probe kernels: " + s.message();
    return verdict;
  }
  for (const farm::v1::Gpu& gpu : caps.gpus()) {
    std::string code = "sm_" + std::to_string(gpu.cc_major()) + std::to_string(gpu.cc_minor());
    std::optional<farm::v1::CudaToolkit> toolkit = ToolkitFor(caps, code);
    if (!toolkit) {
      verdict.error = "probe kernel: no CUDA toolkit here emits " + code + " for " + GpuText(gpu);
      return verdict;
    }
    Result<std::string> proved = ProveGpu(runner, gpu, *toolkit, work_dir);
    if (!proved.ok()) {
      verdict.error = "probe kernel failed on " + GpuText(gpu) + ": " + proved.status().message();
      return verdict;
    }
    verdict.summary += (verdict.summary.empty() ? "" : "; ") + GpuText(gpu) + ": " + *proved;
  }
  return verdict;
}

}  // namespace farm::agent
