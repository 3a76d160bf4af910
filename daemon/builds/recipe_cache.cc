#include "daemon/builds/recipe_cache.h"

#include "common/sha256.h"
#include "daemon/model/convert.h"

namespace farm::builds {

std::string CacheNamespaceId(const std::string& principal, const std::string& recipe_name) {
  Sha256 h;
  for (const std::string* part : {&principal, &recipe_name}) {
    h.Update(std::to_string(part->size()) + ":");
    h.Update(*part);
  }
  return h.HexDigest().substr(0, 32);
}

Result<LeasedBuild> RecipeCache::Get(int64_t build_id) {
  {
    std::lock_guard lock(mu_);
    auto it = cached_.find(build_id);
    if (it != cached_.end()) return it->second;
  }
  FARM_ASSIGN_OR_RETURN(auto build, builds_->GetBuild(build_id));
  LeasedBuild leased{model::ParseBlob<farm::v1::Recipe>(build.recipe), ""};
  leased.cache_namespace = CacheNamespaceId(build.submitted_by, leased.recipe.name());
  std::lock_guard lock(mu_);
  if (cached_.size() >= kMaxBuilds) cached_.clear();
  cached_[build_id] = leased;
  return leased;
}

}  // namespace farm::builds
