// The gRPC side of authentication: reads the call's authorization metadata for the token
// authority, and converts farm Status values to gRPC statuses.
#ifndef FARM_DAEMON_API_AUTH_H_
#define FARM_DAEMON_API_AUTH_H_

#include <grpcpp/grpcpp.h>

#include "daemon/auth/token_authority.h"

namespace farm::api {

using auth::Need;
using auth::Principal;
using auth::TokenAuthority;

// Authorizes the call's "authorization" metadata for `need`; with `check_role` false only
// the token is checked, not whether its role satisfies `need`.
Result<Principal> AuthorizeCall(TokenAuthority& authority, const grpc::ServerContextBase& call,
                                Need need, bool check_role = true);

// Converts a farm Status to a gRPC status (same code numbers, redacted message). The status
// details (farm/v1/rpc_status.proto) always hold the same code and message, which is how a
// client knows farmd answered; a quota refusal that says when to retry
// (quota::RetryAfterMs) also carries it there as google.rpc.RetryInfo.
grpc::Status ToGrpc(const Status& status);

// The type URL of a google.rpc.RetryInfo detail, as every gRPC client names it.
inline constexpr char kRetryInfoTypeUrl[] = "type.googleapis.com/google.rpc.RetryInfo";

}  // namespace farm::api

#endif  // FARM_DAEMON_API_AUTH_H_
