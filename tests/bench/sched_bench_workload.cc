#include "tests/bench/sched_bench_workload.h"

#include <vector>

namespace farm::bench {
namespace {

// The recipe's axes: 5 Pythons x 2 CUDA x 10 arch lists = 100 cells at most. The first
// p, c, a values of each axis give a build of p*c*a cells.
const std::vector<std::string> kPythons = {"3.9", "3.10", "3.11", "3.12", "3.13"};
const std::vector<std::string> kCudas = {"12.8", "13.0"};
const std::vector<std::string> kArchs = {"8.0",     "8.6",     "8.9",     "9.0",      "12.0",
                                         "8.0;8.6", "8.6;8.9", "8.9;9.0", "9.0;12.0", "8.0;12.0"};

std::string YamlList(const std::vector<std::string>& values, size_t n) {
  std::string out = "[";
  for (size_t i = 0; i < n; ++i) out += (i ? ", \"" : "\"") + values[i] + "\"";
  return out + "]";
}

}  // namespace

std::string RecipeYaml(int cells) {
  for (size_t c = 1; c <= kCudas.size(); ++c) {
    for (size_t a = 1; a <= kArchs.size(); ++a) {
      if (cells % (c * a) != 0) continue;
      size_t p = cells / (c * a);
      if (p < 1 || p > kPythons.size()) continue;
      return "name: sched-bench\nversion: \"0.0.1\"\nsource:\n  git: {url: "
             "\"https://example.invalid/"
             "sched-bench.git\", commit: \"0123456789abcdef0123456789abcdef01234567\"}\n"
             "build: \"true\"\ntimeout: 60\nmatrix:\n  python: " +
             YamlList(kPythons, p) + "\n  cuda: " + YamlList(kCudas, c) +
             "\n  arch_lists: " + YamlList(kArchs, a) + "\n  platform: [linux_x86_64]\n";
    }
  }
  return "";
}

farm::v1::Capabilities MakeCapabilities(int index) {
  farm::v1::Capabilities caps;
  caps.set_hostname("bench-" + std::to_string(index));
  caps.set_platform("linux_x86_64");
  caps.set_os("linux");
  caps.set_cpu_arch("x86_64");
  caps.set_cpu_cores(16);
  caps.set_ram_bytes(64LL << 30);
  caps.set_free_disk_bytes(500LL << 30);
  caps.set_max_concurrent_jobs(1);
  for (const auto& py : kPythons) {
    auto* p = caps.add_pythons();
    p->set_path("/usr/bin/python" + py);
    p->set_version(py);
  }
  for (const auto& cuda : kCudas) {
    auto* tk = caps.add_toolkits();
    tk->set_path("/usr/local/cuda-" + cuda);
    tk->set_version(cuda);
    for (const char* code : {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_120"}) {
      tk->add_gpu_codes(code);
    }
  }
  return caps;
}

}  // namespace farm::bench
