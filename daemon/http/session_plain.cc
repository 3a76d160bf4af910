// HttpSession over plain TCP (session_impl.h); its TLS twin is session_tls.cc.
#include "daemon/http/session_impl.h"

namespace farm::http {

void StartPlainSession(boost::asio::ip::tcp::socket socket, std::shared_ptr<ServerState> state,
                       ConnectionLimits::Slot slot) {
  using Session = session::HttpSession<boost::beast::tcp_stream>;
  std::make_shared<Session>(boost::beast::tcp_stream(std::move(socket)), std::move(state),
                            std::move(slot))
      ->Run();
}

}  // namespace farm::http
