// Owners over gRPC on a real FarmServer: validating another principal's wheels is refused,
// recipe and project names are listed to viewers and transferred by admins only (a project
// in any spelling, PEP 503 normalised), an unnamed token gets a
// principal of its own, and token, worker, name and signing-key changes leave audit records
// that hold no token; a call without a valid token leaves none.
#include <gtest/gtest.h>

#include "tests/unit/daemon/api/rpc_fixture.h"

namespace farm::api {
namespace {

class OwnersRpcTest : public RpcTest {
 protected:
  std::vector<farm::v1::AuditRecord> Audit(const std::string& principal = "") {
    farm::v1::ListAuditRequest req;
    req.set_principal(principal);
    req.set_limit(1000);
    farm::v1::ListAuditResponse resp;
    auto s = farm_->ListAudit(Ctx(admin_).get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return {resp.records().begin(), resp.records().end()};
  }
};

TEST_F(OwnersRpcTest, OnlyTheOwnerOrAnAdminValidatesAWheelAgain) {
  store::Store& store = *server_->context()->store;
  store::BuildRow b{
      .recipe_name = "alice-kernel", .recipe = "", .submitted_by = "alice", .created_ms = 1};
  std::vector<store::JobRow> jobs(1);
  jobs[0].cell = "";
  ASSERT_OK(store.CreateBuild(&b, &jobs));
  ASSERT_OK(store.ClaimRecipeName("alice-kernel", "alice", 1).status());
  auto artifact = store.InsertArtifact({.job_id = jobs[0].id,
                                        .attempt = 0,
                                        .filename = "a.whl",
                                        .sha256 = std::string(64, 'a'),
                                        .size = 1});
  ASSERT_OK(artifact.status());
  std::string alice = Token("submitter", "alice"), mallory = Token("submitter", "mallory");

  farm::v1::ValidateArtifactRequest req;
  req.set_artifact_id(artifact->id);
  farm::v1::Job job;
  grpc::Status refused = farm_->ValidateArtifact(Ctx(mallory).get(), req, &job);
  EXPECT_EQ(refused.error_code(), StatusCode::PERMISSION_DENIED);
  EXPECT_NE(refused.error_message().find("belongs to alice"), std::string::npos)
      << refused.error_message();
  EXPECT_TRUE(store.ListValidationJobs(jobs[0].id, 0)->empty());  // nothing queued
  auto records = Audit("mallory");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].action(), "artifact.validate");
  EXPECT_EQ(records[0].outcome(), "denied");
  // Alice's own wheel: her request passes the ownership check (this store's artifact has
  // no manifest, so it fails after, for what it is, not for whose it is).
  grpc::Status own = farm_->ValidateArtifact(Ctx(alice).get(), req, &job);
  EXPECT_NE(own.error_code(), StatusCode::PERMISSION_DENIED) << own.error_message();
}

TEST_F(OwnersRpcTest, NamesAreListedToViewersAndTransferredByAdminsOnly) {
  ASSERT_OK(server_->context()->store->ClaimRecipeName("odd-recipe", "alice", 1).status());
  std::string viewer = Token("viewer", "reader"), submitter = Token("submitter", "alice");
  farm::v1::ListRecipeNamesResponse names;
  ASSERT_TRUE(farm_->ListRecipeNames(Ctx(viewer).get(), {}, &names).ok());
  ASSERT_EQ(names.names_size(), 1);
  EXPECT_EQ(names.names(0).owner(), "alice");

  farm::v1::TransferRecipeNameRequest req;
  req.set_name("odd-recipe");
  req.set_to("bob");
  farm::v1::RecipeName moved;
  EXPECT_EQ(farm_->TransferRecipeName(Ctx(submitter).get(), req, &moved).error_code(),
            StatusCode::PERMISSION_DENIED);  // even its owner: only admins transfer
  req.set_to("");
  EXPECT_EQ(farm_->TransferRecipeName(Ctx(admin_).get(), req, &moved).error_code(),
            StatusCode::INVALID_ARGUMENT);
  req.set_to("bob\nfake line");
  EXPECT_EQ(farm_->TransferRecipeName(Ctx(admin_).get(), req, &moved).error_code(),
            StatusCode::INVALID_ARGUMENT);
  req.set_to("bob");
  ASSERT_TRUE(farm_->TransferRecipeName(Ctx(admin_).get(), req, &moved).ok());
  EXPECT_EQ(moved.owner(), "bob");

  // The transfer is now bob's name: the admin's submit is allowed, alice's is refused.
  Submit();
  farm::v1::SubmitBuildRequest sub;
  sub.set_recipe_yaml(kRecipe);
  farm::v1::SubmitBuildResponse resp;
  grpc::Status squat = farm_->SubmitBuild(Ctx(submitter).get(), sub, &resp);
  EXPECT_EQ(squat.error_code(), StatusCode::PERMISSION_DENIED);
  EXPECT_NE(squat.error_message().find("belongs to bob"), std::string::npos);
  farm::v1::ListAuditRequest audit;
  farm::v1::ListAuditResponse records;
  EXPECT_EQ(farm_->ListAudit(Ctx(submitter).get(), audit, &records).error_code(),
            StatusCode::PERMISSION_DENIED);
}

TEST_F(OwnersRpcTest, ProjectsAreListedToViewersAndTransferredByAdminsOnly) {
  ASSERT_OK(server_->context()->store->ClaimProjectName("alib", "alice", 1).status());
  std::string viewer = Token("viewer", "reader"), submitter = Token("submitter", "alice");
  farm::v1::ListProjectNamesRequest one;
  one.set_name("ALib");  // any spelling of the name
  farm::v1::ListProjectNamesResponse names;
  ASSERT_TRUE(farm_->ListProjectNames(Ctx(viewer).get(), one, &names).ok());
  ASSERT_EQ(names.names_size(), 1);
  EXPECT_EQ(names.names(0).name(), "alib");
  EXPECT_EQ(names.names(0).owner(), "alice");

  farm::v1::TransferRecipeNameRequest req;
  req.set_name("A_Lib");
  req.set_to("bob");
  farm::v1::RecipeName moved;
  EXPECT_EQ(farm_->TransferProjectName(Ctx(submitter).get(), req, &moved).error_code(),
            StatusCode::PERMISSION_DENIED);  // even its owner: only admins transfer
  req.set_name("not a name!");
  EXPECT_EQ(farm_->TransferProjectName(Ctx(admin_).get(), req, &moved).error_code(),
            StatusCode::INVALID_ARGUMENT);
  req.set_name("ALib");
  ASSERT_TRUE(farm_->TransferProjectName(Ctx(admin_).get(), req, &moved).ok());
  EXPECT_EQ(moved.name(), "alib");
  EXPECT_EQ(moved.owner(), "bob");
  auto records = Audit("bootstrap-admin");
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(records[0].action(), "name.transfer");
  EXPECT_EQ(records[0].target(), "project alib");
  EXPECT_EQ(records[0].detail(), "from alice to bob");
}

TEST_F(OwnersRpcTest, TokensAndWorkersAreAuditedWithoutTheirSecrets) {
  farm::v1::CreateTokenRequest req;
  req.set_role("submitter");
  farm::v1::CreateTokenResponse first, second;
  ASSERT_TRUE(farm_->CreateToken(Ctx(admin_).get(), req, &first).ok());
  ASSERT_TRUE(farm_->CreateToken(Ctx(admin_).get(), req, &second).ok());
  // Unnamed tokens are two principals, not one called "submitter".
  EXPECT_NE(first.name(), second.name());
  EXPECT_EQ(first.name().rfind("submitter-", 0), 0u) << first.name();
  auto [worker_id, worker_token] = RegisterWorker();
  farm::v1::RevokeTokenRequest revoke;
  revoke.set_id(first.id());
  farm::v1::TokenInfo info;
  ASSERT_TRUE(farm_->RevokeToken(Ctx(admin_).get(), revoke, &info).ok());
  farm::v1::CancelBuildRequest cancel;
  cancel.set_build_id(1);
  farm::v1::Build build;
  EXPECT_EQ(farm_->CancelBuild(Ctx("not-a-token").get(), cancel, &build).error_code(),
            StatusCode::UNAUTHENTICATED);

  auto records = Audit();
  ASSERT_EQ(records.size(), 4u);  // the call without a valid token left none
  EXPECT_EQ(records[0].action(), "token.revoke");
  EXPECT_EQ(records[0].detail(), "\"" + first.name() + "\" (role submitter)");
  EXPECT_EQ(records[1].action(), "worker.register");
  EXPECT_EQ(records[1].principal(), "bootstrap-enroll");
  EXPECT_EQ(records[1].role(), "enroll");
  EXPECT_NE(records[1].detail().find(worker_id), std::string::npos);
  EXPECT_EQ(records[2].action(), "token.create");
  EXPECT_EQ(records[2].detail(), "id " + second.id());
  farm::v1::ListAuditResponse all;
  farm::v1::ListAuditRequest list;
  ASSERT_TRUE(farm_->ListAudit(Ctx(admin_).get(), list, &all).ok());
  std::string text = all.DebugString();
  for (const std::string& secret : {first.token(), second.token(), worker_token, admin_, enroll_}) {
    EXPECT_EQ(text.find(secret), std::string::npos);
  }
}

TEST_F(OwnersRpcTest, SigningKeyChangesAreAdminOnlyAndAudited) {
  std::string submitter = Token("submitter", "mallory");
  farm::v1::RotateProvenanceKeyRequest rotate;
  farm::v1::ProvenanceKeys keys;
  EXPECT_EQ(farm_->RotateProvenanceKey(Ctx(submitter).get(), rotate, &keys).error_code(),
            StatusCode::PERMISSION_DENIED);
  ASSERT_TRUE(farm_->RotateProvenanceKey(Ctx(admin_).get(), rotate, &keys).ok());
  const std::string made = keys.changed_keyid();
  ASSERT_FALSE(made.empty());
  farm::v1::RevokeProvenanceKeyRequest revoke;
  revoke.set_keyid(made);
  revoke.set_reason("copied off the host");
  ASSERT_TRUE(farm_->RevokeProvenanceKey(Ctx(admin_).get(), revoke, &keys).ok());

  auto records = Audit();
  ASSERT_GE(records.size(), 3u);
  EXPECT_EQ(records[0].action(), "key.revoke");
  EXPECT_EQ(records[0].outcome(), "ok");
  EXPECT_EQ(records[0].target(), "provenance key " + made);
  EXPECT_EQ(records[0].detail(), "revoked " + made + ": copied off the host");
  EXPECT_EQ(records[1].action(), "key.rotate");
  EXPECT_EQ(records[1].outcome(), "ok");
  EXPECT_EQ(records[1].detail(), "new signing key " + made);
  EXPECT_EQ(records[2].action(), "key.rotate");
  EXPECT_EQ(records[2].principal(), "mallory");
  EXPECT_EQ(records[2].outcome(), "denied");
}

}  // namespace
}  // namespace farm::api
