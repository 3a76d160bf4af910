#include "daemon/app/lock_routes.h"

#include <string_view>
#include <utility>

namespace farm::app {

std::function<std::string(const std::string& url)> UpstreamUrlOf(
    const mirror::PullThroughCache* cache) {
  return [cache](const std::string& url) -> std::string {
    static constexpr std::string_view kFiles = "/upstream/files/";
    size_t at = url.find(kFiles);
    if (cache == nullptr || at == std::string::npos) return url;
    std::string rest = url.substr(at + kFiles.size());  // <index>/<sha256>/<filename>
    size_t slash = rest.find('/');
    if (slash == std::string::npos) return url;
    Result<std::string> listed =
        cache->ListedUrl(rest.substr(0, slash), rest.substr(slash + 1, 64));
    return listed.ok() ? *listed : url;
  };
}

locks::IndexRoutes IndexRoutesOf(std::map<std::string, std::string> indexes, std::string base,
                                 std::shared_ptr<const mirror::InternalAccess> internal) {
  return [indexes = std::move(indexes), base = std::move(base),
          internal = std::move(internal)](const std::string& variant) -> Result<locks::IndexRoute> {
    auto it = indexes.find(variant);
    if (it == indexes.end()) {
      return Status::FailedPrecondition(
          "no index to resolve the environment from: this farmd has no --upstream-index " +
          variant);
    }
    std::string url = it->second;
    if (!base.empty()) {
      FARM_ASSIGN_OR_RETURN(url, internal->IndexUrl(base, variant));
    }
    return locks::IndexRoute{variant, url, it->second};
  };
}

}  // namespace farm::app
