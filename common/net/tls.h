// Transport security shared by farmd, farm-worker and farmctl: which settings a process
// was given (certificate files, the CA to verify its peer with, --insecure), how they are
// read from flags, the environment and config files, and the gRPC credentials they make.
//
// The rule everywhere: TLS when certificates are given; plaintext only where nothing but
// this machine can listen in (a loopback address) or when --insecure says so, which the
// process then says at start. Pure functions apart from reading the PEM files; thread-safe.
#ifndef FARM_COMMON_NET_TLS_H_
#define FARM_COMMON_NET_TLS_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "common/flags.h"
#include "common/status.h"

namespace farm::net {

// A client's side (farmctl, farm-worker).
struct ClientTls {
  std::string ca_file;    // verify farmd against this CA; empty: plaintext
  std::string cert_file;  // the client certificate, presented when farmd asks (mTLS)
  std::string key_file;
  std::string server_name;  // the name farmd's certificate must carry; default: the host
  bool insecure = false;    // plaintext to farmd on another machine
};

// A server's side (farmd's gRPC and HTTP listeners).
struct ServerTls {
  std::string cert_file;  // serve TLS with this certificate and key
  std::string key_file;
  std::string client_ca_file;  // verify client certificates against this CA (mTLS)
  bool insecure = false;       // plaintext on an address other machines can reach
  bool enabled() const { return !cert_file.empty(); }
};

// The flags ClientTlsFromFlags reads: ca, cert, key, tls-server-name, insecure.
std::vector<FlagSpec> ClientTlsFlags();
// The settings from `flags`, each falling back to its environment variable (FARM_CA,
// FARM_CERT, FARM_KEY, FARM_TLS_SERVER_NAME, FARM_INSECURE=1) when the flag (or the config
// file merged into `flags`) does not give it. InvalidArgument for a certificate without
// its key or the reverse.
Result<ClientTls> ClientTlsFromFlags(const Flags& flags);

// The flags ServerTlsFromFlags reads: tls-cert, tls-key, client-ca, insecure.
std::vector<FlagSpec> ServerTlsFlags();
// InvalidArgument for a certificate without its key (or the reverse), or a client CA
// without a certificate to serve.
Result<ServerTls> ServerTlsFromFlags(const Flags& flags);

// Whether `address` ("host:port", "[::1]:port", "host") names this machine only:
// 127.0.0.0/8, ::1 or "localhost".
bool IsLoopback(const std::string& address);

// Credentials for a channel to farmd at `address`: TLS verifying farmd against ca_file
// (presenting cert_file/key_file when given) when ca_file is set; plaintext when the
// address is loopback or `insecure` is set. FailedPrecondition otherwise, naming the flags
// to give; NotFound or InvalidArgument for unreadable PEM files. `args` receives the
// target name override when server_name is set.
Result<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentials(const std::string& address,
                                                                     const ClientTls& tls,
                                                                     grpc::ChannelArguments* args);

// Credentials for a gRPC listener on `listen`: TLS with the certificate (and, with a client
// CA, client certificates verified when presented: GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_
// VERIFY) when enabled; plaintext on a loopback address or with `insecure`.
// FailedPrecondition otherwise, naming the flags.
Result<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(const std::string& listen,
                                                                   const ServerTls& tls);

// Refuses plaintext on `listen` unless it is loopback or `insecure`: the same rule as
// ServerCredentials, for listeners that are not gRPC (the dashboard). `what` names the
// listener and its flag in the message ("the dashboard (--http-listen)").
Status CheckPlaintextAllowed(const std::string& listen, bool insecure, const std::string& what);

// Channel arguments every farm client uses: keepalive pings that notice a dead link within
// seconds (and farmd permits), quick reconnects, and the farm's message size limit.
grpc::ChannelArguments ChannelArgs();

// The server-side counterpart: which keepalive pings farmd accepts and sends.
void AddServerKeepalive(grpc::ServerBuilder* builder);

}  // namespace farm::net

#endif  // FARM_COMMON_NET_TLS_H_
