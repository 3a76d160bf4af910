// The directory of the index: which GPU views exist (gpu_views.h), each with its index
// URL, pip line and one-line install, as JSON for tools (GET / with an Accept of
// application/json, and the "variants" key of the PEP 691 root /simple/) and HTML for
// people (the /simple/ root page); and the install script a person pipes into Python
// (GET /install), which picks the view for the machine it runs on. URLs are absolute,
// built from the request's Host header (only host and port characters are accepted).
// Pure handlers over an IndexCatalog; thread-safe.
#ifndef FARM_DAEMON_HTTP_INDEX_INDEX_DIRECTORY_H_
#define FARM_DAEMON_HTTP_INDEX_INDEX_DIRECTORY_H_

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "daemon/http/index/gpu_views.h"
#include "daemon/http/index/index_catalog.h"
#include "daemon/http/server/http_message.h"

namespace farm::http {

// "https://farm.example:8443" from the Host header; "http://localhost" without a usable one.
std::string BaseUrl(const Request& req);

// One entry per view: variant, gpu, compute_capability, gpus, cuda, torch, index_url,
// projects, pip and install lines.
boost::json::array DirectoryJson(const std::vector<GpuView>& views, const std::string& base);

// The HTML section of the /simple/ root page that lists the views.
std::string DirectoryHtml(const std::vector<GpuView>& views, const std::string& base);

// GET / with Accept: application/json: {"index": ..., "install": ..., "variants": [...],
// "torch_views": [...]} (torch_views.h).
Response DirectoryResponse(IndexCatalog& catalog, const Request& req);

// GET /install: the install script (web/install.py) with this farm's URL filled in, and
// the farm's public key set (Base64 of its JSON, "" for none) that it verifies wheels with.
Response InstallScript(const std::string& web_root, const Request& req,
                       const std::string& keys_base64 = "");

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_INDEX_INDEX_DIRECTORY_H_
