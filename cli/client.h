// FarmClient: farmctl's connection to farmd. Resolves the address and token from flags,
// files and the environment, attaches the bearer token to every call and sets deadlines.
// Not thread-safe; one per command.
#ifndef FARM_CLI_CLIENT_H_
#define FARM_CLI_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <type_traits>

#include "common/net/tls.h"
#include "common/status.h"
#include "farm/v1/client.grpc.pb.h"

namespace farm::cli {

using FarmStub = farm::v1::FarmService::Stub;

// Turns a failed call into a farm Status with a message for people (e.g. "cannot reach
// farmd at 127.0.0.1:7070: is it running?" when the call never reached farmd, "farmd at
// 127.0.0.1:7070 answered: cannot read ..." when farmd itself answered UNAVAILABLE: its
// answers carry their status in the details, gRPC's own failures none). A RetryInfo in the status
// details is said in the message ("retry after N s") when farmd's message does not say it already.
Status FromGrpc(const grpc::Status& status, const std::string& address);

struct ConnectionOptions {
  std::string server;       // host:port
  std::string server_file;  // a ready file holding host:port
  std::string token;
  std::string token_file;
  int64_t timeout_ms = 30000;
  net::ClientTls tls;  // how farmd is reached (TLS, or plaintext on loopback)
};

class FarmClient {
 public:
  // Reads the address and token and sets up the channel; fails with a message naming
  // what is missing, or FailedPrecondition when farmd is on another machine and neither a
  // CA (--ca) nor --insecure was given.
  static Result<std::unique_ptr<FarmClient>> Connect(const ConnectionOptions& options);

  farm::v1::FarmService::Stub* stub() { return stub_.get(); }
  const std::string& address() const { return address_; }
  // A context carrying the token and, when `deadline` is set, the call timeout.
  std::unique_ptr<grpc::ClientContext> Context(bool deadline = true) const;

  // One unary call, `rpc` (e.g. &FarmStub::GetBuild), with the token and the deadline; a
  // failure as FromGrpc words it.
  template <typename Request, typename Response>
  Status Call(grpc::Status (FarmStub::*rpc)(grpc::ClientContext*, const Request&, Response*),
              const std::type_identity_t<Request>& req, Response* resp) const {
    return FromGrpc((stub_.get()->*rpc)(Context().get(), req, resp), address_);
  }

 private:
  std::string address_;
  std::string token_;
  int64_t timeout_ms_ = 30000;
  std::unique_ptr<farm::v1::FarmService::Stub> stub_;
};

}  // namespace farm::cli

#endif  // FARM_CLI_CLIENT_H_
