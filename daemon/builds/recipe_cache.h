// The recipes of recent builds, parsed once: every lease sends its build's recipe, and
// every completion reads its retry policy. Also the compile-cache namespace each lease of
// a build carries. Thread-safe.
#ifndef FARM_DAEMON_BUILDS_RECIPE_CACHE_H_
#define FARM_DAEMON_BUILDS_RECIPE_CACHE_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "common/status.h"
#include "daemon/store/ports/build_reader.h"
#include "farm/v1/types.pb.h"

namespace farm::builds {

// The compile-cache namespace of builds of `recipe_name` submitted by `principal`
// (JobAssignment.cache_namespace): 32 hex digits of a SHA-256 over both, length-prefixed,
// so no two (principal, recipe) pairs share one and no name can be crafted to reach
// another's.
std::string CacheNamespaceId(const std::string& principal, const std::string& recipe_name);

// What every lease of a build carries: its recipe and its compile-cache namespace.
struct LeasedBuild {
  farm::v1::Recipe recipe;
  std::string cache_namespace;
};

class RecipeCache {
 public:
  // `builds` outlives the cache.
  explicit RecipeCache(store::BuildReader* builds) : builds_(builds) {}

  // The recipe of build `build_id` and its namespace, read from the store the first time.
  Result<LeasedBuild> Get(int64_t build_id);

 private:
  static constexpr size_t kMaxBuilds = 256;  // a bound; older builds are read again
  store::BuildReader* builds_;
  std::mutex mu_;
  std::map<int64_t, LeasedBuild> cached_;  // guarded by mu_
};

}  // namespace farm::builds

#endif  // FARM_DAEMON_BUILDS_RECIPE_CACHE_H_
