// TLS settings: which addresses allow plaintext, how flags and the environment combine, and
// the errors that name the flags to give.
#include "common/net/tls.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "common/fs.h"
#include "tests/support/test_util.h"

namespace farm::net {
namespace {

// Parses `args` into `flags` as the command line of `program`.
Status ParseArgs(Flags& flags, const char* program, std::vector<std::string> args) {
  args.insert(args.begin(), program);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return flags.Parse(static_cast<int>(argv.size()), argv.data());
}

Result<ClientTls> ParseClient(std::vector<std::string> args) {
  Flags flags(ClientTlsFlags());
  FARM_RETURN_IF_ERROR(ParseArgs(flags, "farmctl", std::move(args)));
  return ClientTlsFromFlags(flags);
}

Result<ServerTls> ParseServer(std::vector<std::string> args) {
  Flags flags(ServerTlsFlags());
  FARM_RETURN_IF_ERROR(ParseArgs(flags, "farmd", std::move(args)));
  return ServerTlsFromFlags(flags);
}

TEST(IsLoopbackTest, OnlyThisMachinesAddresses) {
  EXPECT_TRUE(IsLoopback("127.0.0.1:7070"));
  EXPECT_TRUE(IsLoopback("127.1.2.3:0"));
  EXPECT_TRUE(IsLoopback("localhost:7070"));
  EXPECT_TRUE(IsLoopback("[::1]:7070"));
  EXPECT_TRUE(IsLoopback("::1"));
  EXPECT_FALSE(IsLoopback("0.0.0.0:7070"));
  EXPECT_FALSE(IsLoopback("[::]:7070"));
  EXPECT_FALSE(IsLoopback("10.1.2.3:7443"));
  EXPECT_FALSE(IsLoopback("farm.example.lan:7443"));
  EXPECT_FALSE(IsLoopback("128.0.0.1:7070"));
  EXPECT_FALSE(IsLoopback(""));
}

TEST(ClientTlsTest, FlagsWinOverTheEnvironment) {
  setenv("FARM_CA", "/env/ca.pem", 1);
  setenv("FARM_INSECURE", "1", 1);
  auto from_env = ParseClient({});
  ASSERT_TRUE(from_env.ok()) << from_env.status().ToString();
  EXPECT_EQ(from_env->ca_file, "/env/ca.pem");
  EXPECT_TRUE(from_env->insecure);
  auto from_flag = ParseClient({"--ca", "/flag/ca.pem"});
  ASSERT_TRUE(from_flag.ok());
  EXPECT_EQ(from_flag->ca_file, "/flag/ca.pem");
  unsetenv("FARM_CA");
  unsetenv("FARM_INSECURE");
}

TEST(ClientTlsTest, CertificateNeedsKeyAndCa) {
  EXPECT_EQ(ParseClient({"--cert", "c.pem"}).status().code(), StatusCode::kInvalidArgument);
  auto no_ca = ParseClient({"--cert", "c.pem", "--key", "k.pem"});
  EXPECT_EQ(no_ca.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(no_ca.status().message().find("--ca"), std::string::npos);
  EXPECT_TRUE(ParseClient({"--ca", "a.pem", "--cert", "c.pem", "--key", "k.pem"}).ok());
}

TEST(ServerTlsTest, ClientCaNeedsACertificate) {
  EXPECT_EQ(ParseServer({"--tls-cert", "c.pem"}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseServer({"--client-ca", "ca.pem"}).status().code(), StatusCode::kInvalidArgument);
  auto ok = ParseServer({"--tls-cert", "c.pem", "--tls-key", "k.pem", "--client-ca", "ca.pem"});
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(ok->enabled());
}

TEST(PlaintextTest, RefusedOffLoopbackUnlessInsecure) {
  EXPECT_OK(CheckPlaintextAllowed("127.0.0.1:0", false, "gRPC (--listen)"));
  Status refused = CheckPlaintextAllowed("0.0.0.0:7070", false, "gRPC (--listen)");
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("--tls-cert"), std::string::npos);
  EXPECT_NE(refused.message().find("--insecure"), std::string::npos);
  EXPECT_OK(CheckPlaintextAllowed("0.0.0.0:7070", true, "gRPC (--listen)"));
  EXPECT_EQ(ServerCredentials("10.0.0.1:7443", ServerTls{}).status().code(),
            StatusCode::kFailedPrecondition);
}

TEST(ChannelCredentialsTest, ClientRefusesPlaintextToAnotherMachine) {
  grpc::ChannelArguments args;
  EXPECT_TRUE(ChannelCredentials("127.0.0.1:7070", ClientTls{}, &args).ok());
  auto refused = ChannelCredentials("10.0.0.1:7443", ClientTls{}, &args);
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("--ca"), std::string::npos);
  ClientTls insecure;
  insecure.insecure = true;
  EXPECT_TRUE(ChannelCredentials("10.0.0.1:7443", insecure, &args).ok());
}

TEST(ChannelCredentialsTest, UnreadableOrNonPemFilesAreNamed) {
  farm::testing::ScopedTempDir dir;
  grpc::ChannelArguments args;
  ClientTls tls;
  tls.ca_file = dir.path() + "/missing.pem";
  auto missing = ChannelCredentials("10.0.0.1:7443", tls, &args);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("missing.pem"), std::string::npos);
  ASSERT_TRUE(fs::WriteFileAtomic(dir.path() + "/junk.pem", "not a certificate\n").ok());
  tls.ca_file = dir.path() + "/junk.pem";
  EXPECT_EQ(ChannelCredentials("10.0.0.1:7443", tls, &args).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace farm::net
