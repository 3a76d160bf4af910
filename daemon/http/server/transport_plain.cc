// The plain TCP Transport (transport.h) and the start of a plain HTTP session.
#include <boost/asio/post.hpp>

#include "daemon/http/server/session.h"
#include "daemon/http/server/transport.h"

namespace farm::http {

namespace beast = boost::beast;
namespace net = boost::asio;

namespace {

class PlainTransport final : public Transport {
 public:
  explicit PlainTransport(net::ip::tcp::socket socket) : stream_(std::move(socket)) {}

  net::any_io_executor get_executor() override { return stream_.get_executor(); }
  beast::tcp_stream& tcp() override { return stream_; }
  bool tls() const override { return false; }

  void Handshake(Done done) override {
    net::post(stream_.get_executor(),
              [done = std::move(done)]() mutable { std::move(done)(beast::error_code()); });
  }

  void Shutdown(Done done) override {
    beast::error_code ec;
    stream_.socket().shutdown(net::ip::tcp::socket::shutdown_send, ec);
    net::post(stream_.get_executor(),
              [done = std::move(done), ec]() mutable { std::move(done)(ec); });
  }

  void ReadSome(net::mutable_buffer buffer, Moved done) override {
    stream_.async_read_some(buffer, Relay(std::move(done)));
  }

  void WriteSome(std::vector<net::const_buffer> buffers, Moved done) override {
    stream_.async_write_some(buffers, Relay(std::move(done)));
  }

 private:
  beast::tcp_stream stream_;
};

}  // namespace

void StartPlainSession(net::ip::tcp::socket socket, std::shared_ptr<ServerState> state,
                       ConnectionLimits::Slot slot) {
  std::make_shared<HttpSession>(ErasedStream(std::make_unique<PlainTransport>(std::move(socket))),
                                std::move(state), std::move(slot))
      ->Run();
}

}  // namespace farm::http
