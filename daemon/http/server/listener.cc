// The dashboard's listener: accepts, admits or refuses, and hands admitted connections to
// their session (transport_plain.cc, transport_tls.cc, session.h).
//
// A refusal costs no read and no TLS handshake: on plain HTTP one fixed 503 is written
// without waiting (the socket's send buffer is empty) and the connection lingers at most
// kLingerTime, discarding what the client sends, so that closing it does not reset the
// connection under the client's feet before it read the 503; past kMaxLingering such
// connections, and on TLS, the socket is simply closed.
#include <boost/asio.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <chrono>
#include <memory>

#include "common/log.h"
#include "daemon/http/server/security_headers.h"
#include "daemon/http/server/server_state.h"

namespace farm::http {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;
using namespace std::chrono_literals;

namespace {

constexpr auto kLingerTime = 1s;
constexpr int kMaxLingering = 64;

std::string RefusalText(Admission why, const DashboardOptions& o) {
  std::string body =
      why == Admission::kAddressFull
          ? "too many connections from your address: farmd serves at most " +
                std::to_string(o.max_connections_per_address) +
                " at once per client address (--http-max-connections-per-address); retry "
                "shortly\n"
          : "too many connections: farmd serves at most " + std::to_string(o.max_connections) +
                " at once (--http-max-connections); retry shortly\n";
  std::string head =
      "HTTP/1.1 503 Service Unavailable\r\nServer: farmd\r\nContent-Type: text/plain; "
      "charset=utf-8\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n";
  for (const auto& [k, v] : SecurityHeaders()) head += k + ": " + v + "\r\n";
  return head + "\r\n" + body;
}

// A refused plain connection after its 503: reads and drops until the client closes or
// kLingerTime passes.
class Lingering : public std::enable_shared_from_this<Lingering> {
 public:
  Lingering(tcp::socket socket, std::shared_ptr<ServerState> state)
      : socket_(std::move(socket)), timer_(socket_.get_executor()), state_(std::move(state)) {
    state_->refusals_lingering.fetch_add(1);
  }
  ~Lingering() { state_->refusals_lingering.fetch_sub(1); }

  void Run() {
    timer_.expires_after(kLingerTime);
    timer_.async_wait([self = shared_from_this()](error_code ec) {
      if (!ec) self->socket_.close(ec);
    });
    Drain();
  }

 private:
  void Drain() {
    socket_.async_read_some(net::buffer(scratch_),
                            [self = shared_from_this()](error_code ec, std::size_t) {
                              if (ec) {
                                self->timer_.cancel();
                                return;
                              }
                              self->Drain();
                            });
  }

  tcp::socket socket_;
  net::steady_timer timer_;
  std::shared_ptr<ServerState> state_;
  char scratch_[512];
};

void Refuse(tcp::socket socket, Admission why, const std::shared_ptr<ServerState>& state,
            bool tls) {
  error_code ec;
  if (tls || state->refusals_lingering.load() >= kMaxLingering) {
    socket.close(ec);
    return;
  }
  std::string text = RefusalText(why, state->options);
  socket.non_blocking(true, ec);
  if (!ec) socket.write_some(net::buffer(text), ec);
  if (!ec) socket.shutdown(tcp::socket::shutdown_send, ec);
  if (ec) {
    socket.close(ec);
    return;
  }
  std::make_shared<Lingering>(std::move(socket), state)->Run();
}

std::string ClientKeyOf(const tcp::endpoint& peer) {
  const net::ip::address& a = peer.address();
  if (a.is_v4()) {
    auto b = a.to_v4().to_bytes();
    return ClientKey(b.data(), b.size());
  }
  auto b = a.to_v6().to_bytes();
  return ClientKey(b.data(), b.size());
}

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  // `tls` null: plain HTTP.
  Listener(net::io_context& ioc, tcp::acceptor acceptor, std::shared_ptr<ServerState> state,
           std::shared_ptr<net::ssl::context> tls)
      : ioc_(ioc),
        acceptor_(std::move(acceptor)),
        retry_(ioc),
        state_(std::move(state)),
        tls_(std::move(tls)) {}

  void Run() { DoAccept(); }

 private:
  void DoAccept() {
    acceptor_.async_accept(net::make_strand(ioc_), boost::beast::bind_front_handler(
                                                       &Listener::OnAccept, shared_from_this()));
  }

  void OnAccept(error_code ec, tcp::socket socket) {
    if (ec) {
      Fail(ec, "accept");
      if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
      // Out of descriptors and similar: pause instead of spinning.
      retry_.expires_after(100ms);
      retry_.async_wait([self = shared_from_this()](error_code e) {
        if (!e) self->DoAccept();
      });
      return;
    }
    Admit(std::move(socket));
    DoAccept();
  }

  void Admit(tcp::socket socket) {
    error_code ec;
    tcp::endpoint peer = socket.remote_endpoint(ec);
    if (ec) return;  // already gone; the socket closes here
    ConnectionLimits::Slot slot = state_->limits.Admit(ClientKeyOf(peer));
    if (!slot.admitted()) {
      log::Debug("http: refused a connection from " + peer.address().to_string() + " (" +
                 (slot.admission() == Admission::kAddressFull ? "per-address" : "total") +
                 " limit)");
      return Refuse(std::move(socket), slot.admission(), state_, tls_ != nullptr);
    }
    if (tls_) return StartTlsSession(std::move(socket), *tls_, state_, std::move(slot));
    StartPlainSession(std::move(socket), state_, std::move(slot));
  }

  net::io_context& ioc_;
  tcp::acceptor acceptor_;
  net::steady_timer retry_;
  std::shared_ptr<ServerState> state_;
  std::shared_ptr<net::ssl::context> tls_;
};

}  // namespace

void Fail(const error_code& ec, const char* what) {
  if (ec == net::error::operation_aborted) return;
  log::Debug(std::string("http ") + what + ": " + ec.message());
}

void StartListener(net::io_context& ioc, tcp::acceptor acceptor, std::shared_ptr<ServerState> state,
                   std::shared_ptr<net::ssl::context> tls) {
  std::make_shared<Listener>(ioc, std::move(acceptor), std::move(state), std::move(tls))->Run();
}

}  // namespace farm::http
