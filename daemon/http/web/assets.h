// The dashboard's web assets (web/index.html, app.js, style.css): embedded into the binary
// at build time (embed_assets.cmake generates the table), or read from a directory during
// development. Read-only after static initialisation; thread-safe.
#ifndef FARM_DAEMON_HTTP_WEB_ASSETS_H_
#define FARM_DAEMON_HTTP_WEB_ASSETS_H_

#include <string>
#include <string_view>
#include <vector>

#include "daemon/http/server/http_message.h"

namespace farm::http {

struct EmbeddedAsset {
  std::string_view name;  // file name under web/, "app.js"
  std::string_view data;
};

// Defined in the generated web_assets.cc.
const std::vector<EmbeddedAsset>& EmbeddedAssets();

// "text/html; charset=utf-8" for .html and so on; application/octet-stream otherwise.
std::string ContentTypeFor(std::string_view name);

// Serves asset `name` from `web_root` when set, else from the embedded copies. 404 for a
// missing asset or a name that is not a plain file name.
Response ServeAsset(const std::string& web_root, std::string_view name);

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_WEB_ASSETS_H_
