#include "daemon/locks/env_locker.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "common/log.h"
#include "common/recipe/cell_environment.h"
#include "common/sha256.h"

namespace farm::locks {
namespace {

// What makes two cells' environments the same: they get one resolution and one lock.
std::string SpecKey(const farm::v1::ProvisionSpec& spec) {
  std::vector<std::string> reqs = Requirements(spec);
  std::sort(reqs.begin(), reqs.end());
  std::string text = spec.python() + "\n" + spec.platform() + "\n" + spec.torch_variant() + "\n" +
                     spec.torch_index() + "\n" + Sha256Hex(spec.lock()) + "\n";
  for (const std::string& req : reqs) text += req + "\n";
  return Sha256Hex(text);
}

std::string MajorMinor(const std::string& version) {
  size_t first = version.find('.');
  size_t second = first == std::string::npos ? first : version.find('.', first + 1);
  return version.substr(0, second);
}

}  // namespace

std::vector<std::string> Requirements(const farm::v1::ProvisionSpec& spec) {
  std::vector<std::string> out;
  if (spec.torch_newest()) {
    out.push_back("torch==" + spec.torch_minor() + ".*");
  } else if (!spec.torch_version().empty()) {
    out.push_back("torch==" + spec.torch_version());
  }
  out.insert(out.end(), spec.requirements().begin(), spec.requirements().end());
  if (!spec.torch_version().empty()) {
    auto pins = spec.torch_requirements().find(spec.torch_version() + "+" + spec.torch_variant());
    if (pins != spec.torch_requirements().end()) {
      out.insert(out.end(), pins->second.pins().begin(), pins->second.pins().end());
    }
  }
  return out;
}

std::string DescribeCell(const farm::v1::ProvisionSpec& spec) {
  std::string out = "Python " + spec.python();
  if (!spec.torch_minor().empty()) {
    out += ", torch " + (spec.torch_version().empty() ? spec.torch_minor() : spec.torch_version()) +
           " on " + (spec.torch_index().empty() ? spec.torch_variant() : spec.torch_index());
  }
  return out + ", " + (spec.platform().empty() ? std::string("linux_x86_64") : spec.platform());
}

EnvLocker::EnvLocker(lock::Resolver* resolver, store::LockStore* store, IndexRoutes routes,
                     const Clock* clock, LockerOptions options)
    : resolver_(resolver),
      store_(store),
      routes_(std::move(routes)),
      clock_(clock),
      options_(std::move(options)) {
  if (!options_.sleep) {
    options_.sleep = [](int64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); };
  }
}

int64_t EnvLocker::resolutions() const { return resolutions_.load(); }

Result<lock::EnvLock> EnvLocker::Resolve(const lock::ResolveRequest& request) {
  int64_t delay = options_.retry_delay_ms;
  const int64_t first = clock_->SteadyMs();
  Result<lock::EnvLock> result = Status::Internal("not resolved");
  for (int attempt = 1; attempt <= std::max(1, options_.attempts); ++attempt) {
    resolutions_.fetch_add(1);
    const int64_t started = clock_->SteadyMs();
    result = resolver_->Resolve(request);
    const StatusCode code = result.status().code();
    if (result.ok() ||
        (code != StatusCode::kUnavailable && code != StatusCode::kDeadlineExceeded)) {
      break;
    }
    const int64_t now = clock_->SteadyMs();
    const int64_t next_ends = now + delay + (now - started);
    if (attempt >= options_.attempts || next_ends - first > options_.retry_budget_ms) break;
    options_.sleep(delay);
    delay *= 2;
  }
  return result;
}

// A recipe's own lock: every package pinned to its locked version is resolved on the
// cell's index; pip must choose exactly the locked files and nothing more.
Result<lock::EnvLock> EnvLocker::CheckOwnLock(const farm::v1::ProvisionSpec& spec,
                                              lock::ResolveRequest request) {
  FARM_ASSIGN_OR_RETURN(lock::EnvLock own, lock::ParseToml(spec.lock()));
  request.requirements.clear();
  for (const lock::LockedPackage& p : own.packages) {
    request.requirements.push_back(p.name + "==" + p.version);
  }
  FARM_ASSIGN_OR_RETURN(lock::EnvLock resolved, Resolve(request));
  std::vector<std::string> missing;
  for (const lock::LockedPackage& p : resolved.packages) {
    const lock::LockedPackage* mine = lock::Find(own, p.name);
    if (mine == nullptr) {
      missing.push_back(p.name + "==" + p.version);
    } else if (mine->sha256 != p.sha256) {
      return Status::InvalidArgument("environment.lock's " + mine->filename + " (sha256 " +
                                     mine->sha256.substr(0, 12) + "...) is not the file the " +
                                     request.index_name + " index has for " + p.name + " " +
                                     p.version + " and " + DescribeCell(spec) + " (" + p.filename +
                                     ", sha256 " + p.sha256.substr(0, 12) + "...)");
    }
  }
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing) list += "\n  add " + m;
    return Status::InvalidArgument("environment.lock is not complete for " + DescribeCell(spec) +
                                   ": what it locks also requires" + list);
  }
  own.python = MajorMinor(spec.python());
  own.platform = request.platform;
  own.index_name = request.index_name;
  return lock::ParseToml(lock::ToToml(own));
}

Result<lock::EnvLock> EnvLocker::Lock(const farm::v1::ProvisionSpec& spec) {
  // A release candidate's torch (and what it is resolved with) comes from the variant's
  // pre-release index.
  const std::string variant = !spec.torch_index().empty()    ? spec.torch_index()
                              : spec.torch_variant().empty() ? "cpu"
                                                             : spec.torch_variant();
  FARM_ASSIGN_OR_RETURN(IndexRoute route, routes_(variant));
  lock::ResolveRequest request;
  request.python = spec.python();
  request.platform = spec.platform().empty() ? "linux_x86_64" : spec.platform();
  request.glibc = options_.glibc;
  request.index_url = route.resolve_url;
  request.index_name = route.name;
  request.requirements = Requirements(spec);
  Result<lock::EnvLock> made = spec.lock().empty() ? Resolve(request) : CheckOwnLock(spec, request);
  if (!made.ok()) return made.status().WithContext(DescribeCell(spec));
  for (lock::LockedPackage& p : made->packages) {
    if (p.index.empty() || p.index == route.resolve_url) p.index = route.upstream_url;
  }
  return lock::ParseToml(lock::ToToml(*made));
}

Result<std::vector<CellLock>> EnvLocker::LockAll(
    const std::vector<farm::v1::ProvisionSpec>& specs) {
  // One resolution per distinct environment: specs are grouped by what pip would be asked.
  std::vector<std::string> keys;
  std::map<std::string, size_t> first_of;  // key -> index into `distinct`
  std::vector<size_t> distinct;            // a spec of each key
  for (size_t i = 0; i < specs.size(); ++i) {
    std::string key = SpecKey(specs[i]);
    if (first_of.emplace(key, distinct.size()).second) distinct.push_back(i);
    keys.push_back(key);
  }
  std::vector<Result<lock::EnvLock>> made(distinct.size(), Status::Internal("not run"));
  std::mutex mu;
  size_t next = 0;
  auto work = [&] {
    for (;;) {
      size_t n;
      {
        std::lock_guard lock(mu);
        if (next >= distinct.size()) return;
        n = next++;
      }
      made[n] = Lock(specs[distinct[n]]);
    }
  };
  const int64_t started = clock_->SteadyMs();
  std::vector<std::thread> threads;
  const size_t width = std::min<size_t>(std::max(1, options_.max_parallel), distinct.size());
  for (size_t t = 1; t < width; ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  for (const Result<lock::EnvLock>& r : made) FARM_RETURN_IF_ERROR(r.status());
  log::Info("locked " + std::to_string(specs.size()) + " environment(s) with " +
            std::to_string(distinct.size()) + " resolution(s) in " +
            std::to_string(clock_->SteadyMs() - started) + " ms");
  std::vector<CellLock> out;
  for (size_t i = 0; i < specs.size(); ++i) {
    const lock::EnvLock& l = *made[first_of[keys[i]]];
    CellLock cell{lock::Digest(l), l};
    lock::LockSummary summary = lock::Summarize(l);
    FARM_RETURN_IF_ERROR(store_->PutLock(
        {cell.digest, lock::ToToml(l), summary.packages, summary.bytes, clock_->NowUnixMs()}));
    out.push_back(std::move(cell));
  }
  return out;
}

Status LockJobs(EnvLocker& locker, const farm::v1::Recipe& recipe,
                const std::vector<farm::v1::MatrixCell>& cells,
                std::vector<farm::v1::JobNeeds>* needs) {
  if (!recipe.has_environment()) return Status::Ok();
  std::vector<farm::v1::ProvisionSpec> specs;
  std::vector<std::pair<size_t, std::string>> owners;  // job, "" or its validate cell's key
  for (size_t i = 0; i < cells.size(); ++i) {
    FARM_ASSIGN_OR_RETURN(farm::v1::ProvisionSpec spec, recipe::CellEnvironment(recipe, cells[i]));
    spec.set_lock(recipe.environment().lock());
    specs.push_back(std::move(spec));
    owners.push_back({i, ""});
    for (const farm::v1::MatrixCell& v : (*needs)[i].validate_in()) {
      if (v.SerializeAsString() == cells[i].SerializeAsString()) continue;
      FARM_ASSIGN_OR_RETURN(farm::v1::ProvisionSpec vspec,
                            recipe::ValidationEnvironment(recipe, v));
      specs.push_back(std::move(vspec));
      owners.push_back({i, recipe::ValidateCellKey(v)});
    }
  }
  FARM_ASSIGN_OR_RETURN(std::vector<CellLock> locks, locker.LockAll(specs));
  for (size_t n = 0; n < locks.size(); ++n) {
    farm::v1::JobNeeds& need = (*needs)[owners[n].first];
    if (owners[n].second.empty()) {
      need.set_lock_digest(locks[n].digest);
    } else {
      (*need.mutable_validate_locks())[owners[n].second] = locks[n].digest;
    }
  }
  return Status::Ok();
}

}  // namespace farm::locks
