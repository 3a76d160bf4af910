// Access to the shared objects nvcc built for the wheel tests (see CMakeLists.txt), with
// the reason to skip when they are absent.
#ifndef FARM_TESTS_UNIT_COMMON_WHEEL_ELF_FATBIN_FIXTURE_H_
#define FARM_TESTS_UNIT_COMMON_WHEEL_ELF_FATBIN_FIXTURE_H_

#include <gtest/gtest.h>

#include <string>

#include "common/fs.h"

namespace farm::wheel::testing {

// Reads the module `name` ("multi", "multi_zstd", ...) into *bytes; otherwise sets *skip
// to the reason the test cannot run.
inline void LoadModule(const std::string& name, std::string* bytes, std::string* skip) {
  std::string nvcc = FARM_WHEEL_TEST_NVCC;
  if (nvcc.empty() || nvcc.find("NOTFOUND") != std::string::npos) {
    *skip = "nvcc was not found when the build was configured (set CUDA_HOME)";
    return;
  }
  std::string path = std::string(FARM_WHEEL_TEST_FATBIN_DIR) + "/" + name + ".so";
  Result<std::string> data = fs::ReadFile(path);
  if (!data.ok()) {
    *skip = "nvcc did not produce " + path + " (see the build log): " + data.status().ToString();
    return;
  }
  *bytes = std::move(data).value();
}

}  // namespace farm::wheel::testing

// Loads module `name` into `var` or skips the test with the reason.
#define FARM_LOAD_MODULE_OR_SKIP(name, var)                      \
  std::string var;                                               \
  do {                                                           \
    std::string farm_skip_;                                      \
    ::farm::wheel::testing::LoadModule(name, &var, &farm_skip_); \
    if (!farm_skip_.empty()) GTEST_SKIP() << farm_skip_;         \
  } while (0)

#endif  // FARM_TESTS_UNIT_COMMON_WHEEL_ELF_FATBIN_FIXTURE_H_
