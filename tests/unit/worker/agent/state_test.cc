// The worker's persisted identity (state.h).
#include "worker/agent/state.h"

#include <sys/stat.h>

#include "common/fs.h"
#include "tests/support/test_util.h"

namespace farm::agent {
namespace {

TEST(StateTest, IdentityRoundTripsInA0600File) {
  testing::ScopedTempDir dir;
  std::string state = dir.path() + "/state";
  auto empty = LoadIdentity(state);
  ASSERT_OK(empty.status());
  EXPECT_TRUE(empty->empty());
  ASSERT_OK(SaveIdentity(state, {"w-abc", "tok-123456"}));
  auto loaded = LoadIdentity(state);
  ASSERT_OK(loaded.status());
  EXPECT_EQ(loaded->worker_id, "w-abc");
  EXPECT_EQ(loaded->worker_token, "tok-123456");
  struct stat st;
  ASSERT_EQ(::stat((state + "/worker.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_OK(fs::WriteFileAtomic(state + "/worker.json", "{broken", 0600));
  EXPECT_EQ(LoadIdentity(state).status().code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace farm::agent
