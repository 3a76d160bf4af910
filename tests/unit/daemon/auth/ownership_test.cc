// Who may change what, over a real SQLite store: owners and admins change, other
// submitters are refused with the owner named; recipe names go to their first claimant;
// a retry needs the name too; a principal's role when no token is presented; project
// (distribution) names go to the first principal whose wheel names them.
#include "daemon/auth/ownership.h"

#include "daemon/store/store.h"
#include "tests/support/sqlite_store_test.h"
#include "tests/support/test_util.h"

namespace farm::auth {
namespace {

class OwnershipTest : public testing::SqliteStoreTest {
 protected:
  void SetUpOnStore() override {
    store::BuildRow b{
        .recipe_name = "attn-example", .recipe = "r", .submitted_by = "alice", .created_ms = 1};
    std::vector<store::JobRow> jobs(1);
    jobs[0].cell = "c";
    ASSERT_OK(store_->CreateBuild(&b, &jobs));
    build_id_ = b.id;
    job_id_ = jobs[0].id;
    ASSERT_OK(store_->ClaimRecipeName("attn-example", "alice", 1).status());
  }

  int64_t build_id_ = 0, job_id_ = 0;
  const Principal alice_{"alice", "submitter", ""};
  const Principal mallory_{"mallory", "submitter", ""};
  const Principal admin_{"root", "admin", ""};
};

TEST_F(OwnershipTest, OwnersAndAdminsChangeOthersAreToldWhoOwnsIt) {
  EXPECT_OK(MayChangeBuild(*store_, alice_, build_id_));
  EXPECT_OK(MayChangeBuild(*store_, admin_, build_id_));
  Status refused = MayChangeBuild(*store_, mallory_, build_id_);
  EXPECT_EQ(refused.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(refused.message().find("belongs to alice"), std::string::npos) << refused.message();
  EXPECT_EQ(MayChangeJob(*store_, *store_, mallory_, job_id_).code(),
            StatusCode::kPermissionDenied);
  EXPECT_OK(MayChangeJob(*store_, *store_, alice_, job_id_));
  EXPECT_EQ(MayChangeBuild(*store_, alice_, build_id_ + 100).code(), StatusCode::kNotFound);
  // A principal with an empty name owns nothing, not even an object nobody owns.
  EXPECT_EQ(MayChange({"", "submitter", ""}, "", "build 1").code(), StatusCode::kPermissionDenied);
}

TEST_F(OwnershipTest, NamesGoToTheirFirstClaimantAndAdminsUseAny) {
  EXPECT_OK(MayUseName(*store_, alice_, "attn-example"));
  EXPECT_OK(MayUseName(*store_, admin_, "attn-example"));
  Status squat = MayUseName(*store_, mallory_, "attn-example");
  EXPECT_EQ(squat.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(squat.message().find("\"attn-example\" belongs to alice"), std::string::npos);
  EXPECT_EQ(ClaimName(*store_, mallory_, "attn-example", 5).code(), StatusCode::kPermissionDenied);

  EXPECT_OK(MayUseName(*store_, mallory_, "fresh"));  // nobody owns it yet
  EXPECT_OK(ClaimName(*store_, mallory_, "fresh", 5));
  EXPECT_EQ((*store_->GetRecipeName("fresh"))->owner, "mallory");
  EXPECT_EQ(ClaimName(*store_, alice_, "fresh", 6).code(), StatusCode::kPermissionDenied);
  EXPECT_OK(ClaimName(*store_, admin_, "fresh", 7));               // an admin builds under it
  EXPECT_EQ((*store_->GetRecipeName("fresh"))->owner, "mallory");  // and does not take it
}

TEST_F(OwnershipTest, ARetryNeedsTheNameStill) {
  ASSERT_OK(store_->TransferRecipeName("attn-example", "bob", 10).status());
  Status retry = MayChangeJob(*store_, *store_, alice_, job_id_);
  EXPECT_EQ(retry.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(retry.message().find("belongs to bob"), std::string::npos) << retry.message();
  EXPECT_OK(MayChangeBuild(*store_, alice_, build_id_));  // cancelling builds nothing
  EXPECT_OK(MayChangeJob(*store_, *store_, admin_, job_id_));
}

TEST_F(OwnershipTest, SchedulesBelongToTheirCreator) {
  store::ScheduleRow row{.name = "n",
                         .recipe_name = "attn-example",
                         .cron = "@daily",
                         .time_zone = "UTC",
                         .created_by = "alice",
                         .created_ms = 1};
  ASSERT_OK(store_->InsertSchedule(&row));
  EXPECT_OK(MayChangeSchedule(*store_, alice_, row.id));
  EXPECT_OK(MayChangeSchedule(*store_, admin_, row.id));
  EXPECT_EQ(MayChangeSchedule(*store_, mallory_, row.id).code(), StatusCode::kPermissionDenied);
}

TEST_F(OwnershipTest, APrincipalActsWithItsStrongestLiveToken) {
  testing::FakeClock clock;
  TokenAuthority authority(store_.get(), &clock);
  ASSERT_OK(authority.Create("viewer", "alice").status());
  auto submitter = authority.Create("submitter", "alice");
  ASSERT_OK(submitter.status());
  ASSERT_OK(authority.Create("admin", "alice", "", /*ttl_ms=*/1000).status());
  EXPECT_EQ(authority.PrincipalNamed("alice")->role, "admin");
  clock.Advance(2000);  // the admin token expired
  EXPECT_EQ(authority.PrincipalNamed("alice")->role, "submitter");
  auto tokens = store_->ListTokens();
  ASSERT_OK(tokens.status());
  for (const auto& t : *tokens) {
    if (t.name == "alice" && t.role == "submitter") {
      ASSERT_OK(authority.Revoke(TokenAuthority::IdOf(t.hash), clock.NowUnixMs()).status());
    }
  }
  EXPECT_EQ(authority.PrincipalNamed("alice")->role, "viewer");
  EXPECT_EQ(authority.PrincipalNamed("nobody").status().code(), StatusCode::kUnauthenticated);
}

TEST_F(OwnershipTest, AProjectBelongsToItsFirstPublisherAndOthersAreToldWhoOwnsIt) {
  auto first = ClaimProject(*store_, alice_, "alib", 10);
  ASSERT_OK(first.status());
  EXPECT_EQ(first->owner, "alice");
  EXPECT_EQ(first->claimed_ms, 10);
  EXPECT_OK(ClaimProject(*store_, alice_, "alib", 11).status());  // hers: more wheels of it

  auto squat = ClaimProject(*store_, mallory_, "alib", 12);
  EXPECT_EQ(squat.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(squat.status().message().find("project \"alib\" belongs to alice"), std::string::npos)
      << squat.status().message();
  EXPECT_NE(squat.status().message().find("farmctl projects transfer"), std::string::npos);
  EXPECT_EQ((*store_->GetProjectName("alib"))->owner, "alice");  // the squat took nothing

  auto admin = ClaimProject(*store_, admin_, "alib", 13);  // an admin publishes any project
  ASSERT_OK(admin.status());
  EXPECT_EQ(admin->owner, "alice");  // without taking it
  ASSERT_OK(store_->TransferProjectName("alib", "mallory", 14).status());
  EXPECT_OK(ClaimProject(*store_, mallory_, "alib", 15).status());
  EXPECT_EQ(ClaimProject(*store_, alice_, "alib", 16).status().code(),
            StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace farm::auth
