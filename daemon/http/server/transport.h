// The byte stream under an HTTP session, plain TCP or TLS behind one interface, so that
// Beast's HTTP templates are compiled once (session_read.cc, session_write.cc) instead of
// once per stream type: instantiated for plain TCP and TLS in one file they took 90 s of
// compiling, for TLS alone 80 s. Only the few byte-level operations below are compiled per
// stream (transport_plain.cc, transport_tls.cc); completion handlers cross the interface
// as asio::any_completion_handler, which keeps their executor.
//
// Thread-safety: as the socket beneath it; used from its session's strand only.
#ifndef FARM_DAEMON_HTTP_SERVER_TRANSPORT_H_
#define FARM_DAEMON_HTTP_SERVER_TRANSPORT_H_

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <memory>
#include <vector>

namespace farm::http {

class Transport {
 public:
  using Done = boost::asio::any_completion_handler<void(boost::beast::error_code)>;
  using Moved = boost::asio::any_completion_handler<void(boost::beast::error_code, std::size_t)>;

  virtual ~Transport() = default;
  virtual boost::asio::any_io_executor get_executor() = 0;
  // The TCP stream with its deadline (expires_after), beneath TLS if any.
  virtual boost::beast::tcp_stream& tcp() = 0;
  virtual bool tls() const = 0;
  // TLS: the server's handshake and the close_notify; plain: done at once, and a shutdown of
  // the sending side.
  virtual void Handshake(Done done) = 0;
  virtual void Shutdown(Done done) = 0;
  virtual void ReadSome(boost::asio::mutable_buffer buffer, Moved done) = 0;
  virtual void WriteSome(std::vector<boost::asio::const_buffer> buffers, Moved done) = 0;
};

// The handler a Transport gives the stream beneath it: calls `done` on the stream's own
// executor, which is the session's strand. (Handing the any_completion_handler itself to a
// Beast tcp_stream does not compile with Boost 1.81: its any_completion_executor cannot be
// required never to block.)
template <class Handler>
auto Relay(Handler done) {
  return [done = std::move(done)](auto... result) mutable { std::move(done)(result...); };
}

// A Beast AsyncReadStream and AsyncWriteStream over a Transport.
class ErasedStream {
 public:
  using executor_type = boost::asio::any_io_executor;

  explicit ErasedStream(std::unique_ptr<Transport> transport) : transport_(std::move(transport)) {}

  executor_type get_executor() { return transport_->get_executor(); }
  Transport& transport() { return *transport_; }

  // Reads into the first non-empty buffer of `buffers` (a read may always read less).
  template <class MutableBufferSequence, class Token>
  auto async_read_some(const MutableBufferSequence& buffers, Token&& token) {
    boost::asio::mutable_buffer first;
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers) && first.size() == 0; ++it) {
      first = *it;
    }
    return boost::asio::async_initiate<Token, void(boost::beast::error_code, std::size_t)>(
        [](auto handler, Transport* t, boost::asio::mutable_buffer b) {
          t->ReadSome(b, Transport::Moved(std::move(handler)));
        },
        token, transport_.get(), first);
  }

  // Writes some of `buffers` (at most the first 64, as a socket's gathered write does).
  template <class ConstBufferSequence, class Token>
  auto async_write_some(const ConstBufferSequence& buffers, Token&& token) {
    std::vector<boost::asio::const_buffer> list;
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers) && list.size() < 64; ++it) {
      list.emplace_back(*it);
    }
    return boost::asio::async_initiate<Token, void(boost::beast::error_code, std::size_t)>(
        [](auto handler, Transport* t, std::vector<boost::asio::const_buffer> b) {
          t->WriteSome(std::move(b), Transport::Moved(std::move(handler)));
        },
        token, transport_.get(), std::move(list));
  }

 private:
  std::unique_ptr<Transport> transport_;
};

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_SERVER_TRANSPORT_H_
