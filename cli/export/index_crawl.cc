#include "cli/export/index_crawl.h"

#include <algorithm>
#include <boost/json.hpp>

#include "cli/export/index_links.h"
#include "cli/url_fetch.h"

namespace farm::cli::exporter {

namespace json = boost::json;

namespace {

constexpr size_t kMaxPages = 20000;
constexpr size_t kMaxFiles = 100000;
constexpr int64_t kMaxCrawlBytes = 1LL << 30;  // every page held until it is written

class CurlIndexHttp : public IndexHttp {
 public:
  explicit CurlIndexHttp(std::string ca_file) : ca_file_(std::move(ca_file)) {}

  Status Get(const std::string& url, const std::string& accept, int64_t max_bytes,
             const std::function<Status(std::string_view)>& sink) override {
    Status first = Status::Ok();
    FetchOptions options{.ca_file = ca_file_, .max_bytes = max_bytes, .accept = accept};
    Status fetched = Fetch(url, options, [&](std::string_view block) {
      if (first.ok()) first = sink(block);
    });
    return first.ok() ? fetched : first;
  }

 private:
  std::string ca_file_;
};

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

Status Bad(const std::string& url, const std::string& what) {
  return Status::DataLoss("farmd's page " + url + " " + what + ": refusing to export it");
}

Result<json::object> ParseObject(const std::string& url, const std::string& text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return Bad(url, "is not a JSON object");
  return std::move(v.get_object());
}

std::string StringOf(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : "";
}

// Whether `path` is a view: "<variant>/sm<cc>/simple/" or "<variant>/simple/".
bool IsViewPath(std::string_view path) {
  std::vector<std::string_view> segs;
  for (size_t pos = 0; pos < path.size();) {
    size_t slash = path.find('/', pos);
    if (slash == path.npos) return false;  // a view is a directory
    segs.push_back(path.substr(pos, slash - pos));
    pos = slash + 1;
  }
  if (segs.size() < 2 || segs.size() > 3 || segs.back() != "simple") return false;
  std::string_view variant = segs[0];
  if (variant.size() > 64 || variant == "api" || variant == "files" || variant == "simple" ||
      !std::all_of(variant.begin(), variant.end(),
                   [](char c) { return IsLowerAlnum(c) || c == '.' || c == '-' || c == '_'; })) {
    return false;
  }
  if (segs.size() == 3) {
    std::string_view gpu = segs[1];
    return gpu.size() > 2 && gpu.size() <= 6 && gpu.starts_with("sm") &&
           std::all_of(gpu.begin() + 2, gpu.end(), [](char c) { return c >= '0' && c <= '9'; });
  }
  return true;
}

// Whether `path` is a torch view: "cu<digits>/sm<digits>/torch<release>/simple/", the
// release made of digits, lowercase letters and dots (daemon/http/index/torch_views.h).
bool IsTorchViewPath(std::string_view path) {
  auto digits = [](std::string_view s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  std::vector<std::string_view> segs;
  for (size_t pos = 0; pos < path.size() && segs.size() < 5;) {
    size_t slash = path.find('/', pos);
    if (slash == path.npos) return false;
    segs.push_back(path.substr(pos, slash - pos));
    pos = slash + 1;
  }
  if (segs.size() != 4 || segs[3] != "simple" || segs[0].size() > 6 || segs[1].size() > 6 ||
      !segs[0].starts_with("cu") || !digits(segs[0].substr(2)) || !segs[1].starts_with("sm") ||
      !digits(segs[1].substr(2)) || !segs[2].starts_with("torch")) {
    return false;
  }
  std::string_view torch = segs[2].substr(5);
  return !torch.empty() && torch.size() <= 32 && torch.front() >= '0' && torch.front() <= '9' &&
         torch.find("..") == torch.npos && std::all_of(torch.begin(), torch.end(), [](char c) {
           return IsLowerAlnum(c) || c == '.';
         });
}

class Crawler {
 public:
  Crawler(IndexHttp& http, std::string base) : http_(http), base_(std::move(base)) {}

  Result<Crawl> Run() {
    FARM_ASSIGN_OR_RETURN(crawl_.directory_json, Fetch("", "application/json"));
    FARM_ASSIGN_OR_RETURN(std::vector<std::string> views, Views());
    crawl_.views = static_cast<int>(views.size());
    for (const std::string& view : views) {
      FARM_ASSIGN_OR_RETURN(CrawledPage page, FetchPage(view));
      FARM_ASSIGN_OR_RETURN(json::object list, ParseObject(base_ + "/" + view, page.json));
      crawl_.pages.push_back(std::move(page));
      const json::value* projects = list.if_contains("projects");
      if (projects == nullptr || !projects->is_array()) {
        return Bad(base_ + "/" + view, "has no \"projects\" list");
      }
      for (const json::value& p : projects->get_array()) {
        std::string name = p.is_object() ? StringOf(p.get_object(), "name") : "";
        if (!IsProjectName(name)) {
          return Bad(base_ + "/" + view, "lists a project named \"" + name.substr(0, 100) +
                                             "\", not a normalized project name");
        }
        FARM_RETURN_IF_ERROR(ProjectPage(view + name + "/", name));
      }
    }
    return std::move(crawl_);
  }

 private:
  Result<std::string> Fetch(const std::string& path, const std::string& accept) {
    std::string url = base_ + "/" + path;
    auto body = GetAll(http_, url, accept, kMaxPageBytes);
    if (!body.ok()) return body.status();
    bytes_ += static_cast<int64_t>(body->size());
    if (bytes_ > kMaxCrawlBytes) {
      return Status::ResourceExhausted("the index's pages add up to more than " +
                                       std::to_string(kMaxCrawlBytes) + " bytes");
    }
    return body;
  }

  Result<CrawledPage> FetchPage(const std::string& dir) {
    if (crawl_.pages.size() >= kMaxPages) {
      return Status::ResourceExhausted("the index has more than " + std::to_string(kMaxPages) +
                                       " pages");
    }
    CrawledPage page{dir, "", ""};
    FARM_ASSIGN_OR_RETURN(page.json, Fetch(dir, kPep691Json));
    FARM_ASSIGN_OR_RETURN(page.html, Fetch(dir, "text/html"));
    return page;
  }

  // The views to export: every view of the directory, each variant's own view, /simple/,
  // and the directory's torch views.
  Result<std::vector<std::string>> Views() {
    std::string url = base_ + "/";
    FARM_ASSIGN_OR_RETURN(json::object dir, ParseObject(url, crawl_.directory_json));
    const json::value* variants = dir.if_contains("variants");
    if (variants == nullptr || !variants->is_array()) {
      return Bad(url, "has no \"variants\" list (is this farmd's HTTP address?)");
    }
    std::set<std::string> views{"simple/"};
    for (const json::value& v : variants->get_array()) {
      std::string link = v.is_object() ? StringOf(v.get_object(), "index_url") : "";
      std::string target = ResolveUrl(url, link);
      auto path = OriginOf(target) == OriginOf(base_)
                      ? SafeExportPath(target.substr(OriginOf(target).size()))
                      : std::nullopt;
      if (!path || !IsViewPath(*path)) {
        return Bad(url, "names the view \"" + link.substr(0, 200) +
                            "\", not /<variant>/sm<cc>/simple/ on the farm");
      }
      views.insert(*path);
      views.insert(path->substr(0, path->find('/') + 1) + "simple/");
    }
    // The torch views of the releases the farm knows (absent from farmds before them).
    if (const json::value* torch = dir.if_contains("torch_views"); torch && torch->is_array()) {
      for (const json::value& v : torch->get_array()) {
        std::string link = v.is_object() ? StringOf(v.get_object(), "index_url") : "";
        std::string target = ResolveUrl(url, link);
        auto path = OriginOf(target) == OriginOf(base_)
                        ? SafeExportPath(target.substr(OriginOf(target).size()))
                        : std::nullopt;
        if (!path || !IsTorchViewPath(*path)) {
          return Bad(url, "names the torch view \"" + link.substr(0, 200) +
                              "\", not /cu<CUDA>/sm<cc>/torch<release>/simple/ on the farm");
        }
        views.insert(*path);
      }
    }
    return std::vector<std::string>(views.begin(), views.end());
  }

  Status ProjectPage(const std::string& dir, const std::string& project) {
    FARM_ASSIGN_OR_RETURN(CrawledPage page, FetchPage(dir));
    std::string url = base_ + "/" + dir;
    FARM_ASSIGN_OR_RETURN(json::object o, ParseObject(url, page.json));
    crawl_.pages.push_back(std::move(page));
    ++crawl_.project_pages;
    const json::value* files = o.if_contains("files");
    if (files == nullptr || !files->is_array()) return Bad(url, "has no \"files\" list");
    for (const json::value& f : files->get_array()) {
      if (!f.is_object()) return Bad(url, "lists a file that is not an object");
      FARM_RETURN_IF_ERROR(File(url, f.get_object()));
    }
    if (const json::value* variants = o.if_contains("variants-json");
        variants != nullptr && variants->is_array()) {
      for (const json::value& v : variants->get_array()) {
        std::string link = v.is_string() ? std::string(v.get_string()) : "";
        std::string want = base_ + "/files/variants/" + project + "/";
        std::string target = ResolveUrl(url, link);
        auto path =
            target.starts_with(want) ? SafeExportPath(target.substr(base_.size())) : std::nullopt;
        if (!path || !path->ends_with("-variants.json") ||
            path->find('/', want.size() - base_.size() - 1) != path->npos) {
          return Bad(url, "links the variants file \"" + link.substr(0, 200) +
                              "\", not /files/variants/" + project + "/<file>-variants.json");
        }
        crawl_.variants_files.insert(*path);
      }
    }
    return Status::Ok();
  }

  Status File(const std::string& page_url, const json::object& f) {
    CrawledFile file;
    file.filename = StringOf(f, "filename");
    if (!IsWheelFileName(file.filename)) {
      return Bad(page_url, "lists the file \"" + file.filename.substr(0, 200) +
                               "\", not a wheel's file name");
    }
    const json::value* hashes = f.if_contains("hashes");
    file.sha256 =
        hashes != nullptr && hashes->is_object() ? StringOf(hashes->get_object(), "sha256") : "";
    if (!IsSha256Hex(file.sha256)) return Bad(page_url, "gives " + file.filename + " no sha256");
    file.path = "files/" + file.sha256 + "/" + file.filename;
    std::string link = StringOf(f, "url");
    std::string want = base_ + "/" + file.path;
    std::string target = ResolveUrl(page_url, link);
    std::string fragment = target.find('#') == target.npos ? "" : target.substr(target.find('#'));
    target = target.substr(0, target.find('#'));
    if (target != want) {
      return Bad(page_url, "links " + file.filename + " at \"" + link.substr(0, 200) +
                               "\", not at the farm's /" + file.path);
    }
    if (!fragment.empty() && fragment != "#sha256=" + file.sha256) {
      return Bad(page_url, "links " + file.filename + " with " + fragment.substr(1) +
                               ", not the sha256 it lists");
    }
    if (const json::value* size = f.if_contains("size"); size != nullptr && size->is_int64()) {
      file.size = size->get_int64();
      if (file.size < 0) return Bad(page_url, "gives " + file.filename + " a negative size");
    }
    if (const json::value* md = f.if_contains("core-metadata"); md != nullptr && md->is_object()) {
      file.metadata_sha256 = StringOf(md->get_object(), "sha256");
      if (!IsSha256Hex(file.metadata_sha256)) {
        return Bad(page_url, "gives the metadata of " + file.filename + " no sha256");
      }
    }
    if (const json::value* p = f.if_contains("provenance"); p != nullptr && p->is_string()) {
      if (ResolveUrl(page_url, std::string(p->get_string())) != want + ".provenance") {
        return Bad(page_url, "links the provenance of " + file.filename + " elsewhere than " +
                                 want + ".provenance");
      }
      file.provenance = true;
    }
    auto [it, added] = crawl_.files.emplace(file.path, file);
    if (added && crawl_.files.size() > kMaxFiles) {
      return Status::ResourceExhausted("the index lists more than " + std::to_string(kMaxFiles) +
                                       " files");
    }
    if (!added && it->second.size != file.size) {
      return Bad(page_url, "gives " + file.filename + " another size than an earlier page");
    }
    return Status::Ok();
  }

  IndexHttp& http_;
  std::string base_;
  Crawl crawl_;
  int64_t bytes_ = 0;
};

}  // namespace

std::unique_ptr<IndexHttp> MakeCurlIndexHttp(const std::string& ca_file) {
  return std::make_unique<CurlIndexHttp>(ca_file);
}

Result<std::string> GetAll(IndexHttp& http, const std::string& url, const std::string& accept,
                           int64_t max_bytes) {
  std::string out;
  FARM_RETURN_IF_ERROR(http.Get(url, accept, max_bytes, [&](std::string_view b) {
    out += b;
    return Status::Ok();
  }));
  return out;
}

Result<Crawl> CrawlIndex(IndexHttp& http, const std::string& farm_base) {
  return Crawler(http, farm_base).Run();
}

bool IsProjectName(std::string_view name) {
  if (name.empty() || name.size() > 128 || !IsLowerAlnum(name.front()) ||
      !IsLowerAlnum(name.back())) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) { return IsLowerAlnum(c) || c == '-'; });
}

bool IsWheelFileName(std::string_view name) {
  if (name.size() < 5 || name.size() > 255 || !name.ends_with(".whl") || name.front() == '.') {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return IsLowerAlnum(c) || (c >= 'A' && c <= 'Z') || c == '.' || c == '_' || c == '+' ||
           c == '-' || c == '!';
  });
}

bool IsSha256Hex(std::string_view hex) {
  return hex.size() == 64 && std::all_of(hex.begin(), hex.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace farm::cli::exporter
