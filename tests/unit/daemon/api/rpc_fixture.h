// The fixture of the gRPC tests: FarmServer on 127.0.0.1:0 with a real SQLite store, its
// bootstrap tokens, stubs of both services, and helpers to submit a build and register a
// worker with odd but legal data.
#ifndef FARM_TESTS_UNIT_DAEMON_API_RPC_FIXTURE_H_
#define FARM_TESTS_UNIT_DAEMON_API_RPC_FIXTURE_H_

#include <grpcpp/grpcpp.h>

#include <climits>
#include <memory>
#include <string>

#include "common/fs.h"
#include "daemon/app/server.h"
#include "farm/v1/client.grpc.pb.h"
#include "farm/v1/worker.grpc.pb.h"
#include "tests/support/test_util.h"

namespace farm::api {

using app::FarmServer;
using app::ServerOptions;

using grpc::StatusCode;

inline constexpr char kUnicode[] = "注意力 Ünïcödé 🚀 “quoted” <b>&amp;</b>";

// A recipe whose matrix keeps one cell and rejects two (no sm_120a/sm_121a with CUDA 12.4).
inline constexpr char kRecipe[] = R"(# 注释 with unicode 🚀
name: odd-recipe
version: "0.1.0"
source:
  git: {url: "https://example.invalid/odd.git", commit: "0123456789abcdef0123456789abcdef01234567"}
env:
  GREETING: "注意力 🚀"
build: |
  echo "编译 🚀"
matrix:
  python: ["3.11"]
  cuda: ["12.4"]
  arch_lists: ["9.0", "12.0a", "12.1a"]
timeout: 60
)";

class RpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.data_dir = dir_.path() + "/data";
    o.listen = "127.0.0.1:0";
    o.publish_interval_ms = 3'600'000;  // the publisher stays idle
    auto server = FarmServer::Start(o);
    ASSERT_OK(server.status());
    server_ = std::move(server.value());
    auto admin = fs::ReadFile(o.data_dir + "/admin.token");
    auto enroll = fs::ReadFile(o.data_dir + "/enroll.token");
    ASSERT_OK(admin.status());
    ASSERT_OK(enroll.status());
    admin_ = Trim(admin.value());
    enroll_ = Trim(enroll.value());
    auto channel = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    farm_ = farm::v1::FarmService::NewStub(channel);
    worker_ = farm::v1::WorkerService::NewStub(channel);
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  static std::string Trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  }

  std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token) {
    auto c = std::make_unique<grpc::ClientContext>();
    c->AddMetadata("authorization", "Bearer " + token);
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    return c;
  }

  // A server error is a defect: odd input must be answered by name.
  static void ExpectHandled(const grpc::Status& s, const std::string& what) {
    EXPECT_NE(s.error_code(), StatusCode::INTERNAL) << what << ": " << s.error_message();
    EXPECT_NE(s.error_code(), StatusCode::UNKNOWN) << what << ": " << s.error_message();
    EXPECT_NE(s.error_code(), StatusCode::UNAVAILABLE) << what << ": " << s.error_message();
  }

  // A new token of `role` named `name`, made by the admin.
  std::string Token(const std::string& role, const std::string& name) {
    farm::v1::CreateTokenRequest req;
    req.set_role(role);
    req.set_name(name);
    farm::v1::CreateTokenResponse resp;
    auto s = farm_->CreateToken(Ctx(admin_).get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp.token();
  }

  farm::v1::Build Submit() {
    farm::v1::SubmitBuildRequest req;
    req.set_recipe_yaml(kRecipe);
    req.set_recipe_path("odd/ünï recipe.yaml");
    req.set_priority(INT32_MAX);
    farm::v1::SubmitBuildResponse resp;
    auto s = farm_->SubmitBuild(Ctx(admin_).get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp.build();
  }

  // Registers a worker with a unicode name and no capabilities; returns its id and token.
  std::pair<std::string, std::string> RegisterWorker() {
    farm::v1::RegisterRequest req;
    req.set_name(kUnicode);
    farm::v1::RegisterResponse resp;
    auto s = worker_->Register(Ctx(enroll_).get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return {resp.worker_id(), resp.worker_token()};
  }

  // What a worker that can build kRecipe's cell reports: linux_x86_64, Python 3.11 and
  // CUDA 12.4 for sm_90.
  static void SetBuilderCapabilities(farm::v1::Capabilities* caps) {
    caps->set_platform("linux_x86_64");
    caps->add_pythons()->set_version("3.11");
    auto* tk = caps->add_toolkits();
    tk->set_version("12.4");
    tk->add_gpu_codes("sm_90"), tk->add_gpu_codes("compute_90");
  }

  // Registers a worker that can build kRecipe's cell; returns its registration.
  farm::v1::RegisterResponse RegisterBuilder() {
    farm::v1::RegisterRequest reg;
    reg.set_name("gpu-host-ünï");
    SetBuilderCapabilities(reg.mutable_capabilities());
    farm::v1::RegisterResponse registered;
    auto s = worker_->Register(Ctx(enroll_).get(), reg, &registered);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return registered;
  }

  farm::testing::ScopedTempDir dir_;
  std::unique_ptr<FarmServer> server_;
  std::string admin_, enroll_;
  std::unique_ptr<farm::v1::FarmService::Stub> farm_;
  std::unique_ptr<farm::v1::WorkerService::Stub> worker_;
};

}  // namespace farm::api

#endif  // FARM_TESTS_UNIT_DAEMON_API_RPC_FIXTURE_H_
