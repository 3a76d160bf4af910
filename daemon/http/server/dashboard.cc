#include "daemon/http/server/dashboard.h"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <mutex>
#include <thread>
#include <vector>

#include "common/log.h"
#include "daemon/http/server/server_state.h"

namespace farm::http {

namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;

namespace {

// The dashboard's TLS: the certificate farmd serves gRPC with; TLS 1.2 and newer.
Result<std::shared_ptr<ssl::context>> MakeTlsContext(const farm::net::ServerTls& tls) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  error_code ec;
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1,
                   ec);
  if (!ec) ctx->use_certificate_chain_file(tls.cert_file, ec);
  if (ec) return Status::InvalidArgument("certificate " + tls.cert_file + ": " + ec.message());
  ctx->use_private_key_file(tls.key_file, ssl::context::pem, ec);
  if (ec) return Status::InvalidArgument("key " + tls.key_file + ": " + ec.message());
  return ctx;
}

Result<tcp::endpoint> ParseListen(const std::string& listen) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return Status::InvalidArgument("listen address needs HOST:PORT");
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  error_code ec;
  auto addr = net::ip::make_address(host, ec);
  if (ec) return Status::InvalidArgument("bad listen host '" + host + "'");
  int port = 0;
  try {
    port = std::stoi(listen.substr(colon + 1));
  } catch (...) {
    port = -1;
  }
  if (port < 0 || port > 65535) return Status::InvalidArgument("bad listen port in " + listen);
  return tcp::endpoint(addr, static_cast<unsigned short>(port));
}

Result<tcp::acceptor> Bind(net::io_context& ioc, const tcp::endpoint& ep) {
  tcp::acceptor acceptor(ioc);
  error_code ec;
  acceptor.open(ep.protocol(), ec);
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(ep, ec);
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec)
    return Status::Unavailable("cannot listen on " + ep.address().to_string() + ":" +
                               std::to_string(ep.port()) + ": " + ec.message());
  return acceptor;
}

void RunLoop(net::io_context* ioc) {
  for (int restarts = 0; restarts < 1000; ++restarts) {
    try {
      ioc->run();
      return;
    } catch (const std::exception& e) {
      log::Error(std::string("http event loop: ") + e.what());
    } catch (...) {
      log::Error("http event loop: unknown exception");
    }
  }
}

}  // namespace

struct Dashboard::Impl {
  std::unique_ptr<net::io_context> ioc = std::make_unique<net::io_context>();
  std::shared_ptr<ReplyGate> gate;
  std::vector<std::thread> threads;
  std::mutex mu;
  bool stopped = false;
};

Dashboard::Dashboard(std::unique_ptr<Impl> impl, std::string address)
    : impl_(std::move(impl)), address_(std::move(address)) {}

Dashboard::~Dashboard() { Shutdown(); }

Result<std::unique_ptr<Dashboard>> Dashboard::Start(const DashboardOptions& options,
                                                    const DashboardDeps& deps) {
  if (deps.store == nullptr || deps.blobs == nullptr || deps.clock == nullptr) {
    return Status::InvalidArgument("dashboard needs a store, a blob store and a clock");
  }
  FARM_ASSIGN_OR_RETURN(tcp::endpoint ep, ParseListen(options.listen));
  std::shared_ptr<ssl::context> tls;
  if (options.tls.enabled()) {
    FARM_ASSIGN_OR_RETURN(tls, MakeTlsContext(options.tls));
  } else {
    FARM_RETURN_IF_ERROR(farm::net::CheckPlaintextAllowed(options.listen, options.tls.insecure,
                                                          "the dashboard (--http-listen)"));
  }
  auto impl = std::make_unique<Impl>();
  try {
    FARM_ASSIGN_OR_RETURN(tcp::acceptor acceptor, Bind(*impl->ioc, ep));
    auto bound = acceptor.local_endpoint();
    std::string address = bound.address().to_string() + ":" + std::to_string(bound.port());
    auto state = std::make_shared<ServerState>(options, deps);
    impl->gate = state->gate;
    StartListener(*impl->ioc, std::move(acceptor), std::move(state), std::move(tls));
    int threads = std::clamp(options.threads, 1, 16);
    for (int i = 0; i < threads; ++i) impl->threads.emplace_back(RunLoop, impl->ioc.get());
    return std::unique_ptr<Dashboard>(new Dashboard(std::move(impl), address));
  } catch (const std::exception& e) {
    return Status::Internal(std::string("starting the dashboard: ") + e.what());
  }
}

void Dashboard::Shutdown() {
  if (!impl_) return;
  std::lock_guard lock(impl_->mu);
  if (impl_->stopped) return;
  impl_->stopped = true;
  // Answers still being made elsewhere (an upstream download) are dropped from here on.
  if (impl_->gate) impl_->gate->Close();
  impl_->ioc->stop();
  for (auto& t : impl_->threads) {
    if (t.joinable()) t.join();
  }
  // Destroying the io_context destroys the pending handlers, which own the listener and the
  // sessions: every socket closes here.
  impl_->ioc.reset();
}

}  // namespace farm::http
