// How farmd's own pip (the lock resolver, common/lock) reaches the indexes it resolves
// environments from: through farmd's pull-through routes when farmd serves them, so that
// the files pip chooses are the ones workers then fetch from farmd, and what each lock
// records is where the index itself has each file.
#ifndef FARM_DAEMON_APP_LOCK_ROUTES_H_
#define FARM_DAEMON_APP_LOCK_ROUTES_H_

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "daemon/locks/env_locker.h"
#include "daemon/mirror/internal_access.h"
#include "daemon/mirror/pull_through.h"

namespace farm::app {

// The URL the upstream index lists for a file pip read through `cache`'s
// /upstream/files/<index>/<sha256>/<filename> route, or the URL itself (any other URL, or
// no cache). `cache` must outlive the function.
std::function<std::string(const std::string& url)> UpstreamUrlOf(
    const mirror::PullThroughCache* cache);

// The route of each of `indexes` (--upstream-index, by variant): read through farmd's
// pull-through route at `base` ("http://" + the dashboard's address) with `internal`'s
// credential, or the index itself when `base` is empty. FailedPrecondition naming the flag
// for a variant farmd has no index for.
locks::IndexRoutes IndexRoutesOf(std::map<std::string, std::string> indexes, std::string base,
                                 std::shared_ptr<const mirror::InternalAccess> internal);

}  // namespace farm::app

#endif  // FARM_DAEMON_APP_LOCK_ROUTES_H_
