#include "common/net/tls.h"

#include <arpa/inet.h>

#include <cstdlib>

#include "common/fs.h"

namespace farm::net {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

std::string FlagOrEnv(const Flags& flags, const std::string& name, const char* env) {
  return flags.Has(name) ? flags.Get(name) : Env(env);
}

bool EnvTrue(const char* name) {
  std::string v = Env(name);
  return v == "1" || v == "true" || v == "yes";
}

std::string HostOf(const std::string& address) {
  if (!address.empty() && address[0] == '[') {
    size_t close = address.find(']');
    return close == std::string::npos ? address : address.substr(1, close - 1);
  }
  size_t colon = address.rfind(':');
  if (colon != std::string::npos && address.find(':') == colon) return address.substr(0, colon);
  return address;  // no port, or a bare IPv6 address
}

Result<std::string> ReadPem(const std::string& path, const std::string& what) {
  auto pem = fs::ReadFile(path);
  if (!pem.ok()) return Status::NotFound("cannot read " + what + " " + path);
  if (pem->find("-----BEGIN ") == std::string::npos) {
    return Status::InvalidArgument(what + " " + path + " holds no PEM data");
  }
  return pem;
}

}  // namespace

std::vector<FlagSpec> ClientTlsFlags() {
  return {
      {"ca", "FILE", "verify farmd's certificate against this CA (default $FARM_CA)"},
      {"cert", "FILE", "client certificate for farmd's mTLS (default $FARM_CERT)"},
      {"key", "FILE", "key of --cert (default $FARM_KEY)"},
      {"tls-server-name", "NAME", "name farmd's certificate must carry (default: the host)"},
      {"insecure", "", "talk to farmd on another machine without TLS (tokens in clear)"},
  };
}

Result<ClientTls> ClientTlsFromFlags(const Flags& flags) {
  ClientTls tls;
  tls.ca_file = FlagOrEnv(flags, "ca", "FARM_CA");
  tls.cert_file = FlagOrEnv(flags, "cert", "FARM_CERT");
  tls.key_file = FlagOrEnv(flags, "key", "FARM_KEY");
  tls.server_name = FlagOrEnv(flags, "tls-server-name", "FARM_TLS_SERVER_NAME");
  tls.insecure = flags.Has("insecure") || EnvTrue("FARM_INSECURE");
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return Status::InvalidArgument("--cert and --key go together");
  }
  if (!tls.cert_file.empty() && tls.ca_file.empty()) {
    return Status::InvalidArgument(
        "--cert needs --ca: a client certificate is only sent over "
        "TLS, which needs the CA that verifies farmd");
  }
  return tls;
}

std::vector<FlagSpec> ServerTlsFlags() {
  return {
      {"tls-cert", "FILE", "serve gRPC and HTTP over TLS with this certificate (PEM)"},
      {"tls-key", "FILE", "key of --tls-cert"},
      {"client-ca", "FILE", "require workers to present a certificate signed by this CA"},
      {"insecure", "", "allow plaintext on addresses other machines can reach (says so at start)"},
  };
}

Result<ServerTls> ServerTlsFromFlags(const Flags& flags) {
  ServerTls tls;
  tls.cert_file = flags.Get("tls-cert");
  tls.key_file = flags.Get("tls-key");
  tls.client_ca_file = flags.Get("client-ca");
  tls.insecure = flags.Has("insecure");
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return Status::InvalidArgument("--tls-cert and --tls-key go together");
  }
  if (!tls.client_ca_file.empty() && tls.cert_file.empty()) {
    return Status::InvalidArgument(
        "--client-ca needs --tls-cert and --tls-key: client "
        "certificates are only asked for over TLS");
  }
  return tls;
}

bool IsLoopback(const std::string& address) {
  std::string host = HostOf(address);
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

Result<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentials(const std::string& address,
                                                                     const ClientTls& tls,
                                                                     grpc::ChannelArguments* args) {
  if (tls.ca_file.empty()) {
    if (IsLoopback(address) || tls.insecure) return grpc::InsecureChannelCredentials();
    return Status::FailedPrecondition(
        "farmd at " + address +
        " is on another machine: give --ca FILE (the farm's CA "
        "certificate, or $FARM_CA) to talk to it over TLS, or --insecure to send tokens and "
        "sources in clear");
  }
  grpc::SslCredentialsOptions ssl;
  FARM_ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadPem(tls.ca_file, "CA certificate"));
  if (!tls.cert_file.empty()) {
    FARM_ASSIGN_OR_RETURN(ssl.pem_cert_chain, ReadPem(tls.cert_file, "client certificate"));
    FARM_ASSIGN_OR_RETURN(ssl.pem_private_key, ReadPem(tls.key_file, "client key"));
  }
  if (!tls.server_name.empty() && args != nullptr) {
    args->SetSslTargetNameOverride(tls.server_name);
  }
  return grpc::SslCredentials(ssl);
}

Status CheckPlaintextAllowed(const std::string& listen, bool insecure, const std::string& what) {
  if (IsLoopback(listen) || insecure) return Status::Ok();
  return Status::FailedPrecondition(
      what + " would serve plaintext on " + listen +
      ", where other machines can listen in: "
      "give --tls-cert and --tls-key (farmctl ca issue makes them), or --insecure to do so "
      "anyway");
}

Result<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(const std::string& listen,
                                                                   const ServerTls& tls) {
  if (!tls.enabled()) {
    FARM_RETURN_IF_ERROR(CheckPlaintextAllowed(listen, tls.insecure, "gRPC (--listen)"));
    return grpc::InsecureServerCredentials();
  }
  grpc::SslServerCredentialsOptions ssl(tls.client_ca_file.empty()
                                            ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                            : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  FARM_ASSIGN_OR_RETURN(pair.cert_chain, ReadPem(tls.cert_file, "certificate"));
  FARM_ASSIGN_OR_RETURN(pair.private_key, ReadPem(tls.key_file, "key"));
  ssl.pem_key_cert_pairs.push_back(std::move(pair));
  if (!tls.client_ca_file.empty()) {
    FARM_ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadPem(tls.client_ca_file, "client CA"));
  }
  return grpc::SslServerCredentials(ssl);
}

grpc::ChannelArguments ChannelArgs() {
  grpc::ChannelArguments args;
  // A cut link shows as a missed ping within 15 s, so calls reconnect as soon as it is back
  // instead of waiting for TCP's retransmission backoff.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // Reconnect quickly after farmd restarts or a link returns; callers back off above this.
  // GRPC_ARG_MIN_RECONNECT_BACKOFF_MS is left alone: gRPC takes it as the shortest time a
  // connection attempt (TCP and TLS handshakes) may take, and calls fail fast while a
  // channel reconnects, so a short one makes TLS handshakes across a real link time out
  // again and again.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 500);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
  args.SetMaxReceiveMessageSize(64 << 20);
  return args;
}

void AddServerKeepalive(grpc::ServerBuilder* builder) {
  // Clients ping every 10 s (ChannelArgs); farmd must not take that for abuse.
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  // And farmd notices a client that vanished (a watch stream of a cut laptop).
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 30000);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
}

}  // namespace farm::net
