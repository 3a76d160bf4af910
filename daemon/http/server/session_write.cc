// HttpSession's writing side (session.h): answers of every body kind, closing, and
// server-sent events.
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/write.hpp>

#include "daemon/http/server/large_file_body.h"
#include "daemon/http/server/security_headers.h"
#include "daemon/http/server/session.h"

namespace farm::http {

namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace net = boost::asio;
using namespace std::chrono_literals;

namespace {
template <class Body>
void SetHead(bhttp::response<Body>& res, const Response& r, bool keep_alive) {
  res.set(bhttp::field::server, "farmd");
  res.set(bhttp::field::content_type, r.content_type);
  if (!r.reason.empty()) res.reason(r.reason);
  for (const auto& [k, v] : SecurityHeaders()) res.set(k, v);
  for (const auto& [k, v] : r.headers) res.set(k, v);
  res.keep_alive(keep_alive);
}

std::string SseHead(const Response& r) {
  std::string head = "HTTP/1.1 200 OK\r\nServer: farmd\r\nContent-Type: " + r.content_type +
                     "\r\nConnection: close\r\nX-Accel-Buffering: no\r\n";
  for (const auto& [k, v] : SecurityHeaders()) head += k + ": " + v + "\r\n";
  for (const auto& [k, v] : r.headers) head += k + ": " + v + "\r\n";
  return head + "\r\n";
}

}  // namespace

void HttpSession::Send(Response&& r, unsigned version, bool keep_alive) {
  hold_ = std::move(r.hold);
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
void HttpSession::Write(std::shared_ptr<bhttp::response<Body>> res) {
  Lowest().expires_after(kWriteTimeout);
  bhttp::async_write(stream_, *res,
                     [self = shared_from_this(), res](beast::error_code ec, std::size_t) {
                       self->OnWrite(ec, res->need_eof());
                     });
}

void HttpSession::SendString(Response&& r, unsigned version, bool keep_alive) {
  auto res = std::make_shared<bhttp::response<bhttp::string_body>>(
      static_cast<bhttp::status>(r.status), version);
  SetHead(*res, r, keep_alive);
  res->content_length(r.body.size());
  if (!head_only_) res->body() = std::move(r.body);
  Write(std::move(res));
}

void HttpSession::SendFile(Response&& r, unsigned version, bool keep_alive) {
  LargeFileBody::value_type body;
  beast::error_code ec;
  body.open(r.file_path.c_str(), ec);
  if (ec) return SendString(ErrorResponse(Status::NotFound("file missing")), version, keep_alive);
  auto res = std::make_shared<bhttp::response<LargeFileBody>>(
      std::piecewise_construct, std::make_tuple(std::move(body)),
      std::make_tuple(bhttp::status::ok, version));
  SetHead(*res, r, keep_alive);
  res->content_length(res->body().size());
  if (head_only_) {
    // An empty string body under the file's length: the string answers' instantiation.
    auto empty = std::make_shared<bhttp::response<bhttp::string_body>>(bhttp::status::ok, version);
    SetHead(*empty, r, keep_alive);
    empty->content_length(res->body().size());
    return Write(std::move(empty));
  }
  Write(std::move(res));
}

void HttpSession::OnWrite(beast::error_code ec, bool close) {
  hold_.reset();
  if (ec) return Fail(ec, "write");
  if (close) return Close();
  WaitForNextRequest();
}

void HttpSession::Close() {
  // TLS sends its close_notify first; a client that never answers it gets 5 s.
  if (Tls()) Lowest().expires_after(std::chrono::seconds(5));
  stream_.transport().Shutdown([self = shared_from_this()](beast::error_code ec) {
    if (ec && ec != net::ssl::error::stream_truncated) Fail(ec, "shutdown");
  });
}

// --- server-sent events: the head and first chunk, then polls until the attempt ends ---
void HttpSession::StartEvents(Response&& r) {
  sse_job_ = r.sse_job_id;
  sse_attempt_ = r.sse_attempt;
  sse_after_ = r.sse_after_seq;
  sse_generation_ = state_->router.deps().store->Generation();
  sse_deadline_ = std::chrono::steady_clock::now() + kSseMaxLife;
  WriteEvents(SseHead(r) + r.body, false);
}

void HttpSession::WriteEvents(std::string chunk, bool last) {
  auto data = std::make_shared<std::string>(std::move(chunk));
  Lowest().expires_after(kWriteTimeout);
  last_write_ = std::chrono::steady_clock::now();
  net::async_write(stream_, net::buffer(*data),
                   [self = shared_from_this(), data, last](beast::error_code ec, std::size_t) {
                     if (ec) return Fail(ec, "event write");
                     if (last) return self->Close();
                     self->Lowest().expires_never();
                     self->WaitEvents();
                   });
}

void HttpSession::WaitEvents() {
  timer_.expires_after(kSsePoll);
  timer_.async_wait(beast::bind_front_handler(&HttpSession::OnEventsTimer, shared_from_this()));
}

void HttpSession::OnEventsTimer(beast::error_code ec) {
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
}  // namespace farm::http
