#include "tests/support/test_util.h"

#include "common/fs.h"

namespace farm::testing {

ScopedTempDir::ScopedTempDir() {
  auto dir = fs::MakeTempDir("", "farm-test-");
  if (!dir.ok())
    ADD_FAILURE() << dir.status().ToString();
  else
    path_ = dir.value();
}

ScopedTempDir::~ScopedTempDir() {
  if (!path_.empty()) (void)fs::RemoveAll(path_);
}

}  // namespace farm::testing
