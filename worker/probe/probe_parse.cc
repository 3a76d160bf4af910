// The pure parsers of probe.h.
#include <algorithm>
#include <cctype>
#include <regex>
#include <set>
#include <sstream>

#include "common/strings.h"
#include "worker/probe/probe.h"

namespace farm::agent {

Result<MemInfo> ParseMemInfo(const std::string& text) {
  MemInfo info;
  std::istringstream in(text);
  std::string key, unit;
  int64_t value = 0;
  bool has_total = false, has_available = false;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    unit.clear();
    if (!(fields >> key >> value)) continue;
    fields >> unit;
    int64_t bytes = unit == "kB" ? value * 1024 : value;
    if (key == "MemTotal:") info.total_bytes = bytes, has_total = true;
    if (key == "MemAvailable:") info.available_bytes = bytes, has_available = true;
  }
  if (!has_total) return Status::InvalidArgument("meminfo has no MemTotal line");
  if (!has_available) info.available_bytes = info.total_bytes;
  return info;
}

std::optional<int64_t> ParseCgroupMemoryLimit(const std::string& text) {
  std::string v = TrimSpace(text);
  if (v.empty() || v == "max") return std::nullopt;
  if (!std::all_of(v.begin(), v.end(), [](unsigned char c) { return std::isdigit(c); })) {
    return std::nullopt;
  }
  if (v.size() > 18) return std::nullopt;
  int64_t limit = std::stoll(v);
  // cgroup v1 says "unlimited" with a page-rounded LONG_MAX.
  if (limit <= 0 || limit >= (int64_t{1} << 62)) return std::nullopt;
  return limit;
}

std::string ParseCgroupV2Path(const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("0::", 0) == 0) return TrimSpace(line.substr(3));
  }
  return "";
}

Result<std::string> ParseNvccVersion(const std::string& text) {
  static const std::regex kRelease(R"(release\s+(\d+)\.(\d+))");
  std::smatch m;
  if (!std::regex_search(text, m, kRelease)) {
    return Status::InvalidArgument("no \"release X.Y\" in nvcc --version output");
  }
  return m[1].str() + "." + m[2].str();
}

std::vector<std::string> ParseGpuCodeList(const std::string& text) {
  static const std::regex kCode(R"((sm|compute)_\d+[af]?)");
  std::vector<std::string> codes;
  std::istringstream in(text);
  for (std::string word; in >> word;) {
    if (std::regex_match(word, kCode) &&
        std::find(codes.begin(), codes.end(), word) == codes.end()) {
      codes.push_back(word);
    }
  }
  return codes;
}

std::vector<std::string> CandidateVariantCodes(const std::vector<std::string>& plain_codes) {
  static const std::regex kSm(R"(sm_(\d+))");
  std::vector<std::string> out;
  for (const auto& code : plain_codes) {
    std::smatch m;
    if (!std::regex_match(code, m, kSm)) continue;
    int n = std::stoi(m[1].str());
    if (n >= 90) out.push_back(code + "a");
    if (n >= 100) out.push_back(code + "f");
  }
  return out;
}

Status ParsePythonProbe(const std::string& text, farm::v1::PythonInterpreter* py) {
  std::istringstream in(text);
  bool has_version = false;
  for (std::string line; std::getline(in, line);) {
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = line.substr(0, eq), value = TrimSpace(line.substr(eq + 1));
    if (key == "version") py->set_version(value), has_version = !value.empty();
    if (key == "torch") py->set_torch_version(value);
    if (key == "torch_cuda") py->set_torch_cuda(value == "None" ? "" : value);
    if (key == "cxx11abi") py->set_torch_cxx11_abi(value == "1" || value == "True");
  }
  if (!has_version) return Status::InvalidArgument("python probe printed no version");
  return Status::Ok();
}

bool KernelReleaseIsWsl2(const std::string& release) {
  std::string r = AsciiLower(release);
  return r.find("microsoft") != std::string::npos || r.find("wsl2") != std::string::npos;
}

std::vector<std::string> CudaDriverCandidates(bool wsl2) {
  if (wsl2) return {std::string(kWslDriverDir) + "/libcuda.so.1", "libcuda.so.1"};
  return {"libcuda.so.1"};
}

std::string Wsl2DriverError(const Wsl2DriverFacts& f) {
  const std::string dir = kWslDriverDir;
  std::string what;
  if (!f.driver_dir_exists) {
    what = dir + " does not exist: Windows did not hand its GPU driver to this distribution";
  } else if (!f.libcuda_exists) {
    what = dir +
           "/libcuda.so.1 does not exist: the Windows NVIDIA driver is missing or too "
           "old for CUDA on WSL2";
  } else {
    what = dir + "/libcuda.so.1 cannot be used: " + f.load_error;
  }
  if (!f.dxg_exists) what += "; /dev/dxg is missing too (no GPU paravirtualization)";
  return "WSL2 host without a usable CUDA driver, so no GPU: " + what +
         ". Fix: on Windows, install the current NVIDIA driver for the GPU (it brings CUDA for "
         "WSL2), run `wsl --update` and then `wsl --shutdown`, and start the worker again; "
         "never install a Linux NVIDIA driver inside WSL2";
}

bool IsUnifiedMemoryGpu(bool integrated, bool uses_host_page_tables, int64_t gpu_bytes,
                        int64_t host_ram_bytes) {
  if (integrated) return true;
  return uses_host_page_tables && host_ram_bytes > 0 &&
         static_cast<double>(gpu_bytes) >= 0.9 * static_cast<double>(host_ram_bytes);
}

std::string PlatformTag(const std::string& machine) {
  if (machine == "arm64" || machine == "aarch64") return "linux_aarch64";
  return "linux_" + machine;
}

const char* PythonProbeScript() {
  return "import sys\n"
         "print('version=%d.%d' % sys.version_info[:2])\n"
         "try:\n"
         "    import torch\n"
         "    print('torch=' + torch.__version__)\n"
         "    print('torch_cuda=' + str(torch.version.cuda or ''))\n"
         "    print('cxx11abi=%d' % int(bool(torch._C._GLIBCXX_USE_CXX11_ABI)))\n"
         "except Exception:\n"
         "    pass\n";
}

}  // namespace farm::agent
