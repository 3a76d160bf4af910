#include "daemon/http/dashboard.h"

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common/log.h"
#include "daemon/http/router.h"

namespace farm::http {

namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;
using namespace std::chrono_literals;

namespace {

constexpr auto kReadTimeout = 30s;
constexpr auto kWriteTimeout = 300s;
constexpr auto kSsePoll = 250ms;
constexpr auto kSseKeepAlive = 15s;
constexpr auto kSseMaxLife = 3600s;
constexpr uint32_t kHeaderLimit = 16 * 1024;

struct ServerState {
  ServerState(const DashboardOptions& o, const DashboardDeps& d) : options(o), router(o, d) {}
  DashboardOptions options;
  Router router;
  std::atomic<int> connections{0};
};

// The one place errors are reported; cancelled operations are part of shutting down.
void Fail(beast::error_code ec, const char* what) {
  if (ec == net::error::operation_aborted) return;
  log::Debug(std::string("http ") + what + ": " + ec.message());
}

Request ToRequest(const bhttp::request<bhttp::string_body>& msg) {
  Request req = MakeRequest(std::string(msg.method_string()), msg.target());
  req.accept = std::string(msg[bhttp::field::accept]);
  req.authorization = std::string(msg[bhttp::field::authorization]);
  req.host = std::string(msg[bhttp::field::host]);
  req.last_event_id = std::string(msg["Last-Event-ID"]);
  req.body = msg.body();
  return req;
}

template <class Body>
void SetHead(bhttp::response<Body>& res, const Response& r, bool keep_alive) {
  res.set(bhttp::field::server, "farmd");
  res.set(bhttp::field::content_type, r.content_type);
  if (!r.reason.empty()) res.reason(r.reason);
  for (const auto& [k, v] : r.headers) res.set(k, v);
  res.keep_alive(keep_alive);
}

std::string SseHead(const Response& r) {
  std::string head = "HTTP/1.1 200 OK\r\nServer: farmd\r\nContent-Type: " + r.content_type +
                     "\r\nConnection: close\r\nX-Accel-Buffering: no\r\n";
  for (const auto& [k, v] : r.headers) head += k + ": " + v + "\r\n";
  return head + "\r\n";
}

// One connection, over plain TCP or TLS (Stream is PlainStream or TlsStream).
template <class Stream>
class HttpSession : public std::enable_shared_from_this<HttpSession<Stream>> {
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

 public:
  HttpSession(Stream&& stream, std::shared_ptr<ServerState> state, bool overloaded)
      : stream_(std::move(stream)),
        timer_(stream_.get_executor()),
        state_(std::move(state)),
        overloaded_(overloaded) {
    state_->connections.fetch_add(1);
  }
  ~HttpSession() { state_->connections.fetch_sub(1); }

  void Run() {
    net::dispatch(stream_.get_executor(),
                  beast::bind_front_handler(&HttpSession::Begin, this->shared_from_this()));
  }

 private:
  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  void Begin() {
    if constexpr (kTls) {
      Lowest().expires_after(kReadTimeout);
      stream_.async_handshake(ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code ec) {
                                if (ec) return Fail(ec, "TLS handshake");
                                self->Serve();
                              });
    } else {
      Serve();
    }
  }

  void Serve() {
    if (!overloaded_) return DoRead();
    Response r = TextResponse(503, "too many connections: farmd serves at most " +
                                       std::to_string(state_->options.max_connections) +
                                       " at once (--http-max-connections); retry shortly\n");
    r.headers.emplace_back("Retry-After", "1");
    SendString(std::move(r), 11, false);
  }

  void DoRead() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(static_cast<uint64_t>(state_->options.max_body_bytes));
    Lowest().expires_after(kReadTimeout);
    bhttp::async_read(stream_, buffer_, *parser_,
                      beast::bind_front_handler(&HttpSession::OnRead, this->shared_from_this()));
  }

  void OnRead(beast::error_code ec, std::size_t) {
    if (ec == bhttp::error::end_of_stream) return Close();
    if (ec == bhttp::error::body_limit || ec == bhttp::error::header_limit) {
      return SendString(
          TextResponse(413, "request too large: farmd accepts headers of at most " +
                                std::to_string(kHeaderLimit) + " bytes and bodies of at most " +
                                std::to_string(state_->options.max_body_bytes) + " bytes\n"),
          11, false);
    }
    if (ec) return Fail(ec, "read");
    const auto& msg = parser_->get();
    Request req = ToRequest(msg);
    head_only_ = req.method == "HEAD";
    Response res = state_->router.Handle(req);
    Send(std::move(res), msg.version(), msg.keep_alive());
  }

  void Send(Response&& r, unsigned version, bool keep_alive) {
    switch (r.kind) {
      case BodyKind::kString:
        return SendString(std::move(r), version, keep_alive);
      case BodyKind::kFile:
        return SendFile(std::move(r), version, keep_alive);
      case BodyKind::kEvents:
        return StartEvents(std::move(r));
    }
  }

  template <class Body>
  void Write(std::shared_ptr<bhttp::response<Body>> res) {
    Lowest().expires_after(kWriteTimeout);
    bhttp::async_write(stream_, *res,
                       [self = this->shared_from_this(), res](beast::error_code ec, std::size_t) {
                         self->OnWrite(ec, res->need_eof());
                       });
  }

  void SendString(Response&& r, unsigned version, bool keep_alive) {
    auto res = std::make_shared<bhttp::response<bhttp::string_body>>(
        static_cast<bhttp::status>(r.status), version);
    SetHead(*res, r, keep_alive);
    res->content_length(r.body.size());
    if (!head_only_) res->body() = std::move(r.body);
    Write(std::move(res));
  }

  void SendFile(Response&& r, unsigned version, bool keep_alive) {
    bhttp::file_body::value_type body;
    beast::error_code ec;
    body.open(r.file_path.c_str(), beast::file_mode::scan, ec);
    if (ec) return SendString(ErrorResponse(Status::NotFound("file missing")), version, keep_alive);
    auto res = std::make_shared<bhttp::response<bhttp::file_body>>(
        std::piecewise_construct, std::make_tuple(std::move(body)),
        std::make_tuple(bhttp::status::ok, version));
    SetHead(*res, r, keep_alive);
    res->content_length(res->body().size());
    if (head_only_) {
      auto empty = std::make_shared<bhttp::response<bhttp::empty_body>>(bhttp::status::ok, version);
      SetHead(*empty, r, keep_alive);
      empty->content_length(res->body().size());
      return Write(std::move(empty));
    }
    Write(std::move(res));
  }

  void OnWrite(beast::error_code ec, bool close) {
    if (ec) return Fail(ec, "write");
    if (close) return Close();
    DoRead();
  }

  void Close() {
    if constexpr (kTls) {
      Lowest().expires_after(std::chrono::seconds(5));
      stream_.async_shutdown([self = this->shared_from_this()](beast::error_code ec) {
        if (ec && ec != ssl::error::stream_truncated) Fail(ec, "TLS shutdown");
      });
    } else {
      beast::error_code ec;
      stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    }
  }

  // --- server-sent events: the head and first chunk, then polls until the attempt ends ---
  void StartEvents(Response&& r) {
    sse_job_ = r.sse_job_id;
    sse_attempt_ = r.sse_attempt;
    sse_after_ = r.sse_after_seq;
    sse_generation_ = state_->router.deps().store->Generation();
    sse_deadline_ = std::chrono::steady_clock::now() + kSseMaxLife;
    WriteEvents(SseHead(r) + r.body, false);
  }

  void WriteEvents(std::string chunk, bool last) {
    auto data = std::make_shared<std::string>(std::move(chunk));
    Lowest().expires_after(kWriteTimeout);
    last_write_ = std::chrono::steady_clock::now();
    net::async_write(
        stream_, net::buffer(*data),
        [self = this->shared_from_this(), data, last](beast::error_code ec, std::size_t) {
          if (ec) return Fail(ec, "event write");
          if (last) return self->Close();
          self->Lowest().expires_never();
          self->WaitEvents();
        });
  }

  void WaitEvents() {
    timer_.expires_after(kSsePoll);
    timer_.async_wait(
        beast::bind_front_handler(&HttpSession::OnEventsTimer, this->shared_from_this()));
  }

  void OnEventsTimer(beast::error_code ec) {
    if (ec) return Fail(ec, "event timer");
    auto now = std::chrono::steady_clock::now();
    if (now > sse_deadline_) return Close();  // the browser reconnects with Last-Event-ID
    int64_t generation = state_->router.deps().store->Generation();
    if (generation != sse_generation_) {
      LogPoll p = state_->router.PollLog(sse_job_, sse_attempt_, sse_after_);
      // A chunk may stop at a page boundary: poll again on the next tick regardless.
      sse_generation_ = p.chunk.empty() ? generation : -1;
      sse_after_ = p.after_seq;
      if (!p.chunk.empty() || p.done) return WriteEvents(std::move(p.chunk), p.done);
    }
    if (now - last_write_ > kSseKeepAlive) return WriteEvents(": keep-alive\n\n", false);
    WaitEvents();
  }

  Stream stream_;
  net::steady_timer timer_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::shared_ptr<ServerState> state_;
  bool overloaded_;
  bool head_only_ = false;
  int64_t sse_job_ = 0;
  int sse_attempt_ = 0;
  int64_t sse_after_ = 0;
  int64_t sse_generation_ = 0;
  std::chrono::steady_clock::time_point sse_deadline_;
  std::chrono::steady_clock::time_point last_write_;
};

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  // `tls` null: plain HTTP.
  Listener(net::io_context& ioc, tcp::acceptor acceptor, std::shared_ptr<ServerState> state,
           std::shared_ptr<ssl::context> tls)
      : ioc_(ioc),
        acceptor_(std::move(acceptor)),
        retry_(ioc),
        state_(std::move(state)),
        tls_(std::move(tls)) {}

  void Run() { DoAccept(); }

 private:
  void DoAccept() {
    acceptor_.async_accept(net::make_strand(ioc_),
                           beast::bind_front_handler(&Listener::OnAccept, shared_from_this()));
  }

  void OnAccept(beast::error_code ec, tcp::socket socket) {
    if (ec) {
      Fail(ec, "accept");
      if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
      // Out of descriptors and similar: pause instead of spinning.
      retry_.expires_after(100ms);
      retry_.async_wait([self = shared_from_this()](beast::error_code e) {
        if (!e) self->DoAccept();
      });
      return;
    }
    bool overloaded = state_->connections.load() >= state_->options.max_connections;
    if (tls_) {
      std::make_shared<HttpSession<TlsStream>>(TlsStream(std::move(socket), *tls_), state_,
                                               overloaded)
          ->Run();
    } else {
      std::make_shared<HttpSession<PlainStream>>(PlainStream(std::move(socket)), state_, overloaded)
          ->Run();
    }
    DoAccept();
  }

  net::io_context& ioc_;
  tcp::acceptor acceptor_;
  net::steady_timer retry_;
  std::shared_ptr<ServerState> state_;
  std::shared_ptr<ssl::context> tls_;
};

// The dashboard's TLS: the certificate farmd serves gRPC with; TLS 1.2 and newer.
Result<std::shared_ptr<ssl::context>> MakeTlsContext(const farm::net::ServerTls& tls) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  beast::error_code ec;
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
  beast::error_code ec;
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
  beast::error_code ec;
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
    std::make_shared<Listener>(*impl->ioc, std::move(acceptor), state, std::move(tls))->Run();
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
  impl_->ioc->stop();
  for (auto& t : impl_->threads) {
    if (t.joinable()) t.join();
  }
  // Destroying the io_context destroys the pending handlers, which own the listener and the
  // sessions: every socket closes here.
  impl_->ioc.reset();
}

}  // namespace farm::http
