// The TLS Transport (transport.h) and the start of an HTTPS session.
#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>

#include "daemon/http/server/session.h"
#include "daemon/http/server/transport.h"

namespace farm::http {

namespace beast = boost::beast;
namespace net = boost::asio;

namespace {

class TlsTransport final : public Transport {
 public:
  TlsTransport(net::ip::tcp::socket socket, net::ssl::context& context)
      : stream_(beast::tcp_stream(std::move(socket)), context) {}

  net::any_io_executor get_executor() override { return stream_.get_executor(); }
  beast::tcp_stream& tcp() override { return beast::get_lowest_layer(stream_); }
  bool tls() const override { return true; }

  void Handshake(Done done) override {
    stream_.async_handshake(net::ssl::stream_base::server, Relay(std::move(done)));
  }

  void Shutdown(Done done) override { stream_.async_shutdown(Relay(std::move(done))); }

  void ReadSome(net::mutable_buffer buffer, Moved done) override {
    stream_.async_read_some(buffer, Relay(std::move(done)));
  }

  void WriteSome(std::vector<net::const_buffer> buffers, Moved done) override {
    stream_.async_write_some(buffers, Relay(std::move(done)));
  }

 private:
  beast::ssl_stream<beast::tcp_stream> stream_;
};

}  // namespace

void StartTlsSession(net::ip::tcp::socket socket, net::ssl::context& tls,
                     std::shared_ptr<ServerState> state, ConnectionLimits::Slot slot) {
  std::make_shared<HttpSession>(
      ErasedStream(std::make_unique<TlsTransport>(std::move(socket), tls)), std::move(state),
      std::move(slot))
      ->Run();
}

}  // namespace farm::http
