#include "daemon/http/server/security_headers.h"

namespace farm::http {

// img-src allows data: for the page's empty favicon; form-action and base-uri keep an
// injected <form> or <base> from sending anything elsewhere.
const char kContentSecurityPolicy[] =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

const std::vector<std::pair<std::string, std::string>>& SecurityHeaders() {
  static const auto* headers = new std::vector<std::pair<std::string, std::string>>{
      {"Content-Security-Policy", kContentSecurityPolicy},
      {"X-Frame-Options", "DENY"},
      {"X-Content-Type-Options", "nosniff"},
      {"Referrer-Policy", "no-referrer"},
  };
  return *headers;
}

}  // namespace farm::http
