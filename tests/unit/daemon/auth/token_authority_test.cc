#include "daemon/auth/token_authority.h"

#include <sys/stat.h>

#include "common/fs.h"
#include "common/sha256.h"
#include "daemon/store/store.h"
#include "tests/support/sqlite_store_test.h"
#include "tests/support/test_util.h"

namespace farm::auth {
namespace {

class TokenAuthorityTest : public testing::SqliteStoreTest {
 protected:
  void SetUpOnStore() override {
    authority_ = std::make_unique<TokenAuthority>(store_.get(), &clock_);
  }
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

TEST_F(TokenAuthorityTest, TheFirstStartWritesTheBootstrapTokensOnce) {
  const std::string dir = dir_.path();
  ASSERT_OK(authority_->BootstrapTokens(dir));
  for (const char* file : {"/admin.token", "/enroll.token"}) {
    struct stat st {};
    ASSERT_EQ(::stat((dir + file).c_str(), &st), 0) << file;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << file;
  }
  auto admin = fs::ReadFile(dir + "/admin.token");
  ASSERT_OK(admin.status());
  ASSERT_FALSE(admin->empty());
  const std::string token = admin->substr(0, admin->size() - 1);  // without the newline
  auto who = authority_->Authorize("Bearer " + token, Need::kAdmin);
  ASSERT_OK(who.status());
  EXPECT_EQ(who->name, "bootstrap-admin");
  // A store that holds a token is not a first start: nothing is made or written again.
  ASSERT_OK(fs::WriteFileAtomic(dir + "/admin.token", "kept\n", 0600));
  ASSERT_OK(authority_->BootstrapTokens(dir));
  EXPECT_EQ(fs::ReadFile(dir + "/admin.token").value(), "kept\n");
  EXPECT_EQ(store_->CountTokens().value(), 2);
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

TEST_F(TokenAuthorityTest, RevokedAndExpiredTokensStopAtTheirNextCall) {
  auto viewer = authority_->Create("viewer", "dashboard", "", 60'000);
  auto worker = authority_->Create("worker", "gpu-1", "w-1");
  ASSERT_OK(viewer.status());
  ASSERT_OK(worker.status());
  EXPECT_OK(authority_->Authorize("Bearer " + viewer.value(), Need::kViewer).status());
  clock_.Advance(60'000);  // the lifetime has passed
  Status expired = authority_->Authorize("Bearer " + viewer.value(), Need::kViewer).status();
  EXPECT_EQ(expired.code(), StatusCode::kUnauthenticated);
  EXPECT_NE(expired.message().find("expired"), std::string::npos);

  const std::string id = TokenAuthority::IdOf(Sha256Hex(worker.value()));
  EXPECT_OK(authority_->Authorize("Bearer " + worker.value(), Need::kWorker).status());
  // The token is remembered now; a revocation through the authority still counts at once.
  auto revoked = authority_->Revoke(id, clock_.NowUnixMs());
  ASSERT_OK(revoked.status());
  EXPECT_EQ(revoked->name, "gpu-1");
  Status refused = authority_->Authorize("Bearer " + worker.value(), Need::kWorker).status();
  EXPECT_EQ(refused.code(), StatusCode::kUnauthenticated);
  EXPECT_NE(refused.message().find("revoked"), std::string::npos);
  EXPECT_EQ(authority_->Revoke(id, 1).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->RevokeToken("abc", 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->RevokeToken("ffffffffffff", 1).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(authority_->Create("viewer", "x", "", -1).status().code(),
            StatusCode::kInvalidArgument);
  auto all = store_->ListTokens();
  ASSERT_OK(all.status());
  EXPECT_EQ(all->size(), 2u);
}

}  // namespace
}  // namespace farm::auth
