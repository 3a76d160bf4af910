#include "cli/client.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "common/fs.h"
#include "common/strings.h"
#include "farm/v1/rpc_status.pb.h"

namespace farm::cli {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

Result<std::string> ResolveAddress(const ConnectionOptions& o) {
  if (!o.server.empty()) return o.server;
  std::string file = !o.server_file.empty() ? o.server_file : Env("FARM_SERVER_FILE");
  if (!file.empty()) {
    auto content = fs::ReadFile(file);
    if (!content.ok())
      return Status::Unavailable("cannot read server file " + file + ": is farmd running?");
    return TrimSpace(content.value());
  }
  std::string env = Env("FARM_SERVER");
  return env.empty() ? std::string("127.0.0.1:7070") : env;
}

Result<std::string> ResolveToken(const ConnectionOptions& o) {
  if (!o.token.empty()) return o.token;
  std::string file = !o.token_file.empty() ? o.token_file : Env("FARM_TOKEN_FILE");
  if (!file.empty()) {
    auto content = fs::ReadFile(file);
    // Like a missing token, a usage error (exit 2): farmd never saw the call.
    if (!content.ok()) return Status::InvalidArgument("cannot read token file " + file);
    return TrimSpace(content.value());
  }
  std::string env = Env("FARM_TOKEN");
  if (env.empty()) {
    return Status::InvalidArgument(
        "no token: pass --token-file FILE (e.g. <data-dir>/admin.token) or set FARM_TOKEN");
  }
  return env;
}

}  // namespace

Result<std::unique_ptr<FarmClient>> FarmClient::Connect(const ConnectionOptions& options) {
  auto client = std::make_unique<FarmClient>();
  FARM_ASSIGN_OR_RETURN(client->address_, ResolveAddress(options));
  FARM_ASSIGN_OR_RETURN(client->token_, ResolveToken(options));
  client->timeout_ms_ = options.timeout_ms;
  grpc::ChannelArguments args = net::ChannelArgs();
  FARM_ASSIGN_OR_RETURN(auto credentials,
                        net::ChannelCredentials(client->address_, options.tls, &args));
  if (options.tls.ca_file.empty() && !net::IsLoopback(client->address_)) {
    std::cerr << "farmctl: talking to farmd at " << client->address_
              << " IN PLAINTEXT (--insecure): the token crosses the network in clear\n";
  }
  auto channel = grpc::CreateCustomChannel(client->address_, credentials, args);
  client->stub_ = farm::v1::FarmService::NewStub(channel);
  return client;
}

std::unique_ptr<grpc::ClientContext> FarmClient::Context(bool deadline) const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->AddMetadata("authorization", "Bearer " + token_);
  if (deadline) {
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms_));
  }
  return ctx;
}

namespace {

// The status details (farm/v1/rpc_status.proto) farmd attaches to every answer; nullopt
// when there are none (gRPC's own failures: farmd was not reached) or they do not parse.
std::optional<farm::v1::RpcStatus> Details(const grpc::Status& status) {
  farm::v1::RpcStatus details;
  if (status.error_details().empty() || !details.ParseFromString(status.error_details())) {
    return std::nullopt;
  }
  return details;
}

// Whether farmd itself answered with this status: its details repeat the code. A channel
// that never reached farmd (refused, reset, no route, TLS) fails with no details.
bool FarmdAnswered(const grpc::Status& status) {
  auto details = Details(status);
  return details && details->code() == static_cast<int32_t>(status.error_code());
}

// The delay of a google.rpc.RetryInfo in the status details, in whole seconds rounded up;
// nullopt without one.
std::optional<int64_t> RetryAfterSeconds(const grpc::Status& status) {
  auto found = Details(status);
  if (!found) return std::nullopt;
  const farm::v1::RpcStatus& details = *found;
  for (const auto& any : details.details()) {
    farm::v1::RetryInfo retry;
    if (any.type_url() != "type.googleapis.com/google.rpc.RetryInfo" ||
        !retry.ParseFromString(any.value())) {
      continue;
    }
    const auto& d = retry.retry_delay();
    return std::max<int64_t>(1, d.seconds() + (d.nanos() > 0 ? 1 : 0));
  }
  return std::nullopt;
}

}  // namespace

Status FromGrpc(const grpc::Status& status, const std::string& address) {
  if (status.ok()) return Status::Ok();
  auto code = static_cast<StatusCode>(status.error_code());
  if (auto retry = RetryAfterSeconds(status);
      retry && status.error_message().find("retry after") == std::string::npos) {
    return Status(code, status.error_message() + "; retry after " + std::to_string(*retry) + " s");
  }
  if (code == StatusCode::kUnavailable && FarmdAnswered(status)) {
    // farmd is up; something it needs is not (an upstream index, the store).
    return Status::Unavailable("farmd at " + address + " answered: " + status.error_message());
  }
  if (code == StatusCode::kUnavailable) {
    return Status::Unavailable("cannot reach farmd at " + address + ": is it running? (" +
                               status.error_message() + ")");
  }
  if (code == StatusCode::kDeadlineExceeded) {
    return Status::DeadlineExceeded("farmd at " + address + " did not answer in time");
  }
  return Status(code, status.error_message());
}

}  // namespace farm::cli
