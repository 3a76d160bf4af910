#include "daemon/http/index/index_directory.h"

#include <algorithm>

#include "daemon/http/index/torch_views.h"
#include "daemon/http/web/assets.h"

namespace farm::http {

namespace json = boost::json;

namespace {

constexpr char kFarmUrlPlaceholder[] = "@FARM_URL@";
constexpr char kFarmKeysPlaceholder[] = "@FARM_KEYS@";

bool HostLike(std::string_view host) {
  return !host.empty() && host.size() <= 255 && std::all_of(host.begin(), host.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' ||
           c == '[' || c == ']';
  });
}

std::string FirstProject(const GpuView& v) {
  return v.projects.empty() ? "PACKAGE" : v.projects.front();
}

}  // namespace

std::string BaseUrl(const Request& req) {
  std::string host = HostLike(req.host) ? req.host : "localhost";
  return std::string(req.secure ? "https://" : "http://") + host;
}

json::array DirectoryJson(const std::vector<GpuView>& views, const std::string& base) {
  json::array out;
  for (const GpuView& v : views) {
    json::array projects;
    for (const auto& p : v.projects) projects.push_back(json::value(p));
    std::string url = base + v.path();
    out.push_back(json::object{
        {"variant", v.variant},
        {"gpu", GpuSegment(v.cc)},
        {"compute_capability", v.cc.ToString()},
        {"gpus", arch::GpusOf(v.cc)},
        {"cuda", v.cuda},
        {"torch", v.torch},
        {"index_url", url},
        {"projects", std::move(projects)},
        {"pip", "pip install --index-url " + url + " " + FirstProject(v)},
        {"install", "curl -fsSL " + base + "/install | python3 - " + FirstProject(v)}});
  }
  return out;
}

std::string DirectoryHtml(const std::vector<GpuView>& views, const std::string& base) {
  std::string html =
      "<section id=\"variants\"><h2>Variants</h2>\n<p>Pick the view of your CUDA, torch and "
      "GPU, or let <code>curl -fsSL " +
      HtmlEscape(base) +
      "/install | python3 - PACKAGE</code> pick it.</p>\n<table>\n<tr><th>variant</th><th>GPU"
      "</th><th>GPUs</th><th>pip</th></tr>\n";
  for (const GpuView& v : views) {
    std::string url = base + v.path();
    html += "<tr><td>" + HtmlEscape(v.variant) + "</td><td>" + GpuSegment(v.cc) + " (cc " +
            v.cc.ToString() + ")</td><td>" + HtmlEscape(arch::GpusOf(v.cc)) +
            "</td><td><code>pip "
            "install --index-url <a href=\"" +
            HtmlEscape(v.path()) + "\">" + HtmlEscape(url) + "</a> " + HtmlEscape(FirstProject(v)) +
            "</code></td></tr>\n";
  }
  return html + "</table></section>\n";
}

Response DirectoryResponse(IndexCatalog& catalog, const Request& req) {
  auto files = catalog.Files("");
  if (!files.ok()) return ErrorResponse(files.status());
  std::string base = BaseUrl(req);
  json::object o{{"index", base + "/simple/"},
                 {"install", "curl -fsSL " + base + "/install | python3 - PACKAGE"},
                 {"variants", DirectoryJson(ListGpuViews(*files), base)},
                 {"torch_views", TorchDirectoryJson(ListTorchViews(catalog, *files), base)}};
  Response r = JsonResponse(200, json::serialize(o));
  r.headers.emplace_back("Vary", "Accept");
  return r;
}

Response InstallScript(const std::string& web_root, const Request& req,
                       const std::string& keys_base64) {
  Response r = ServeAsset(web_root, "install.py");
  if (r.status != 200) return r;
  for (const auto& [placeholder, value] :
       {std::pair<std::string, std::string>{kFarmUrlPlaceholder, BaseUrl(req)},
        {kFarmKeysPlaceholder, keys_base64}}) {
    for (size_t pos = r.body.find(placeholder); pos != std::string::npos;
         pos = r.body.find(placeholder, pos + value.size())) {
      r.body.replace(pos, placeholder.size(), value);
    }
  }
  r.content_type = "text/x-python; charset=utf-8";
  return r;
}

}  // namespace farm::http
