#include "daemon/auth/token_authority.h"

#include "common/sha256.h"
#include "daemon/store/store.h"
#include "tests/support/test_util.h"

namespace farm::auth {
namespace {

class TokenAuthorityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::OpenSqliteStore(dir_.path() + "/farm.db");
    ASSERT_OK(s.status());
    store_ = std::move(s).value();
    authority_ = std::make_unique<TokenAuthority>(store_.get(), &clock_);
  }
  testing::ScopedTempDir dir_;
  testing::FakeClock clock_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<TokenAuthority> authority_;
};

TEST_F(TokenAuthorityTest, RolesAreOrderedAndOnlyHashesAreStored) {
  auto submitter = authority_->Create("submitter", "ci");
  ASSERT_OK(submitter.status());
  EXPECT_OK(authority_->Authorize("Bearer " + submitter.value(), Need::kViewer).status());
  EXPECT_OK(authority_->Authorize("Bearer " + submitter.value(), Need::kSubmitter).status());
  EXPECT_EQ(authority_->Authorize("Bearer " + submitter.value(), Need::kAdmin).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(authority_->Authorize("Bearer " + submitter.value(), Need::kWorker).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_FALSE(store_->FindToken(submitter.value()).ok());  // the token itself is not a key
  EXPECT_TRUE(store_->FindToken(Sha256Hex(submitter.value())).ok());
}

TEST_F(TokenAuthorityTest, MissingMalformedAndUnknownTokensAreUnauthenticated) {
  EXPECT_EQ(authority_->Authorize("", Need::kViewer).status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(authority_->Authorize("Basic abc", Need::kViewer).status().code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(authority_->Authorize("Bearer farm_adm_nope", Need::kViewer).status().code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(authority_->Create("root", "x").status().code(), StatusCode::kInvalidArgument);
}

TEST_F(TokenAuthorityTest, WorkerTokensCarryTheirWorkerAndEnrollTokensOnlyEnroll) {
  auto enroll = authority_->Create("enroll", "fleet");
  auto worker = authority_->Create("worker", "gb10", "w-1");
  EXPECT_OK(authority_->Authorize("Bearer " + enroll.value(), Need::kEnroll).status());
  EXPECT_EQ(authority_->Authorize("Bearer " + enroll.value(), Need::kViewer).status().code(),
            StatusCode::kPermissionDenied);
  auto p = authority_->Authorize("Bearer " + worker.value(), Need::kWorker);
  ASSERT_OK(p.status());
  EXPECT_EQ(p->worker_id, "w-1");
}

}  // namespace
}  // namespace farm::auth
