// HttpSession over TLS (session_impl.h); its plain twin is session_plain.cc.
#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>

#include "daemon/http/session_impl.h"

namespace farm::http {

void StartTlsSession(boost::asio::ip::tcp::socket socket, boost::asio::ssl::context& tls,
                     std::shared_ptr<ServerState> state, ConnectionLimits::Slot slot) {
  using Stream = boost::beast::ssl_stream<boost::beast::tcp_stream>;
  using Session = session::HttpSession<Stream>;
  std::make_shared<Session>(Stream(std::move(socket), tls), std::move(state), std::move(slot))
      ->Run();
}

}  // namespace farm::http
