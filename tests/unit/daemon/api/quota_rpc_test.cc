// Quotas through the real gRPC server: the refusal's code, message and RetryInfo detail,
// and who may read and set a quota.
#include "farm/v1/rpc_status.pb.h"
#include "tests/unit/daemon/api/rpc_fixture.h"

namespace farm::api {
namespace {

class QuotaRpcTest : public RpcTest {
 protected:
  // Submits kRecipe, under another name where given (a recipe name belongs to the first
  // principal that submits it).
  grpc::Status SubmitAs(const std::string& token, const std::string& name = "") {
    farm::v1::SubmitBuildRequest req;
    std::string yaml = kRecipe;
    if (!name.empty()) yaml.replace(yaml.find("odd-recipe"), 10, name);
    req.set_recipe_yaml(yaml);
    farm::v1::SubmitBuildResponse resp;
    return farm_->SubmitBuild(Ctx(token).get(), req, &resp);
  }

  grpc::Status SetQuota(const std::string& token, const std::string& principal, int64_t submissions,
                        farm::v1::Quota* out) {
    farm::v1::SetQuotaRequest req;
    req.set_principal(principal);
    req.mutable_limits()->set_submissions(submissions);
    req.mutable_limits()->set_queued_jobs(-2);
    req.mutable_limits()->set_stored_bytes(-2);
    return farm_->SetQuota(Ctx(token).get(), req, out);
  }
};

TEST_F(QuotaRpcTest, ASubmissionOverTheQuotaIsResourceExhaustedWithRetryInfo) {
  const std::string ci = Token("submitter", "ci");
  farm::v1::Quota set;
  ASSERT_TRUE(SetQuota(admin_, "ci", 2, &set).ok());
  EXPECT_EQ(set.limits().submissions(), 2);
  EXPECT_EQ(set.admin_override().queued_jobs(), -2);
  ASSERT_TRUE(SubmitAs(ci).ok());
  ASSERT_TRUE(SubmitAs(ci).ok());
  grpc::Status refused = SubmitAs(ci);
  ASSERT_EQ(refused.error_code(), StatusCode::RESOURCE_EXHAUSTED) << refused.error_message();
  EXPECT_NE(refused.error_message().find("retry after 1800 s"), std::string::npos)
      << refused.error_message();
  farm::v1::RpcStatus details;
  ASSERT_TRUE(details.ParseFromString(refused.error_details()));
  EXPECT_EQ(details.code(), static_cast<int>(StatusCode::RESOURCE_EXHAUSTED));
  ASSERT_EQ(details.details_size(), 1);
  EXPECT_EQ(details.details(0).type_url(), "type.googleapis.com/google.rpc.RetryInfo");
  farm::v1::RetryInfo retry;
  ASSERT_TRUE(retry.ParseFromString(details.details(0).value()));
  EXPECT_EQ(retry.retry_delay().seconds(), 1800);
  // Another principal, and an admin, are not held back.
  grpc::Status other = SubmitAs(Token("submitter", "other"), "others-recipe");
  EXPECT_TRUE(other.ok()) << other.error_message();
  EXPECT_TRUE(SubmitAs(admin_).ok());
  // What ci holds: the two builds' jobs, and no submission left.
  farm::v1::GetQuotaRequest mine;
  farm::v1::Quota quota;
  ASSERT_TRUE(farm_->GetQuota(Ctx(ci).get(), mine, &quota).ok());
  EXPECT_EQ(quota.principal(), "ci");
  EXPECT_EQ(quota.role(), "submitter");
  EXPECT_EQ(quota.queued_jobs(), 2);
  EXPECT_GT(quota.stored_bytes(), 0);
  EXPECT_LT(quota.submissions_left(), 1);
}

TEST_F(QuotaRpcTest, OnlyAnAdminReadsAnothersQuotaOrSetsOne) {
  const std::string ci = Token("submitter", "ci");
  farm::v1::Quota out;
  EXPECT_EQ(SetQuota(ci, "ci", -1, &out).error_code(), StatusCode::PERMISSION_DENIED);
  farm::v1::GetQuotaRequest theirs;
  theirs.set_principal("bootstrap-admin");
  EXPECT_EQ(farm_->GetQuota(Ctx(ci).get(), theirs, &out).error_code(),
            StatusCode::PERMISSION_DENIED);
  theirs.set_principal("ci");
  ASSERT_TRUE(farm_->GetQuota(Ctx(admin_).get(), theirs, &out).ok());
  EXPECT_EQ(out.role(), "submitter");
  EXPECT_EQ(out.limits().submissions(), 120);
  EXPECT_EQ(SetQuota(admin_, "ci", -7, &out).error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(SetQuota(admin_, "", 1, &out).error_code(), StatusCode::INVALID_ARGUMENT);
}

}  // namespace
}  // namespace farm::api
