// PullThroughCache (pull_through.h): the files. Which index may serve what, one download
// per index and digest, the METADATA kept with a wheel, the accounting and the bound.
#include <unistd.h>

#include <cstdio>

#include "common/fs.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/utf8.h"
#include "common/wheel/wheel_rewrite.h"
#include "daemon/mirror/pull_through.h"
#include "daemon/store/blob/temp_files.h"

namespace farm::mirror {
namespace {

constexpr int64_t kMaxMetadataFile = int64_t{16} << 20;
constexpr size_t kMaxKeptMetadata = size_t{32} << 20;
constexpr char kStagingPrefix[] = "mirror-";
constexpr size_t kUsesPerFlush = 256;

std::string FlightKey(const std::string& source, const std::string& sha256) {
  return source + "\n" + sha256;
}

// The METADATA of a verified wheel as the page's metadata file, with its sha256; empty
// when it has none the store can keep (not UTF-8, a NUL: PostgreSQL text refuses both).
std::pair<std::string, std::string> WheelMetadata(const std::string& path,
                                                  const std::string& name) {
  if (name.size() < 4 || name.compare(name.size() - 4, 4, ".whl") != 0) return {};
  Result<wheel::DistInfoText> text = wheel::ReadDistInfoText(path);
  if (!text.ok() || !IsValidUtf8(text->metadata) ||
      text->metadata.find('\0') != std::string::npos) {
    return {};
  }
  return {Sha256Hex(text->metadata), text->metadata};
}

}  // namespace

struct PullThroughCache::Pins {
  std::mutex mu;
  std::map<std::string, int> counts;

  bool Pinned(const std::string& sha256) {
    std::lock_guard lock(mu);
    return counts.count(sha256) > 0;
  }
  // Unpins its blob when the last copy goes (the answer was sent).
  struct Pin {
    Pin(std::weak_ptr<Pins> p, std::string s) : pins(std::move(p)), sha256(std::move(s)) {}
    Pin(const Pin&) = delete;
    Pin& operator=(const Pin&) = delete;
    std::weak_ptr<Pins> pins;
    std::string sha256;
    ~Pin() {
      if (auto p = pins.lock()) {
        std::lock_guard lock(p->mu);
        if (--p->counts[sha256] <= 0) p->counts.erase(sha256);
      }
    }
  };
  static std::shared_ptr<const void> Hold(const std::shared_ptr<Pins>& pins,
                                          const std::string& sha256) {
    {
      std::lock_guard lock(pins->mu);
      ++pins->counts[sha256];
    }
    return std::make_shared<const Pin>(pins, sha256);
  }
};

PullThroughCache::PullThroughCache(MirrorOptions options, upstream::Fetcher* fetcher,
                                   store::BlobStore* blobs, store::MirrorStore* accounting,
                                   const Clock* clock)
    : options_(std::move(options)),
      fetcher_(fetcher),
      blobs_(blobs),
      accounting_(accounting),
      clock_(clock),
      pins_(std::make_shared<Pins>()),
      scheduler_(options_.limits) {}

void SweepStaging(const std::string& dir, int64_t now_unix_s) {
  auto swept = store::SweepTempDir(
      dir, [](const std::string& name) { return name.starts_with(kStagingPrefix); }, now_unix_s);
  if (!swept.ok()) {
    log::Warn("pull-through cache: cannot sweep " + dir + ": " + swept.status().ToString());
  } else if (swept->files > 0) {
    log::Info("pull-through cache: removed " + std::to_string(swept->files) +
              " unfinished download(s) (" + fs::HumanBytes(swept->bytes) +
              ") of a farmd that stopped mid-download");
  }
}

Status PullThroughCache::Start() {
  if (!options_.staging_dir.empty()) {
    FARM_RETURN_IF_ERROR(fs::MakeDirs(options_.staging_dir, 0700));
    SweepStaging(options_.staging_dir, clock_->NowUnixMs() / 1000);
  }
  FARM_RETURN_IF_ERROR(LoadStored());
  EvictOverBound();
  return Status::Ok();
}

Status PullThroughCache::LoadStored() {
  if (accounting_ == nullptr) return Status::Ok();
  FARM_ASSIGN_OR_RETURN(std::vector<store::MirrorFileRow> rows, accounting_->ListMirrorFiles());
  FARM_ASSIGN_OR_RETURN(int64_t bytes, accounting_->MirrorBytes());
  std::lock_guard<std::mutex> lock(mu_);
  for (const store::MirrorFileRow& row : rows) {
    Stored& s = stored_[row.source][row.sha256];
    s.names.insert(row.filename);
    s.size = row.size;
    s.metadata_sha256 = row.metadata_sha256;
    if (options_.trees.count(row.source) > 0)
      tree_paths_[row.source + "/" + row.filename] = row.sha256;
  }
  stored_bytes_ = bytes;
  return Status::Ok();
}

bool PullThroughCache::UpstreamBlobLocked(const std::string& sha256) const {
  for (const auto& [source, by_sha] : stored_) {
    if (by_sha.count(sha256) > 0) return true;
  }
  return false;
}

bool PullThroughCache::HostAllowed(const std::string& source, const std::string& url) const {
  auto index = options_.indexes.find(source);
  const std::string& base =
      index != options_.indexes.end() ? index->second : options_.trees.at(source);
  const std::string host = upstream::UrlHost(url);
  return !host.empty() &&
         (host == upstream::UrlHost(base) || options_.allowed_hosts.count(host) > 0);
}

Result<MirrorAnswer> PullThroughCache::StoredAnswerLocked(const std::string& source,
                                                          const std::string& sha256,
                                                          const std::string& name) {
  auto by_sha = stored_.find(source);
  if (by_sha == stored_.end()) return Status::NotFound("not stored");
  auto s = by_sha->second.find(sha256);
  if (s == by_sha->second.end() || s->second.names.count(name) == 0) {
    return Status::NotFound("not stored");
  }
  if (!blobs_->Contains(sha256)) {
    if (!s->second.preloaded) by_sha->second.erase(s);  // gone from the blob store
    return Status::NotFound("no longer stored");
  }
  return MirrorAnswer{"application/octet-stream", "", sha256, s->second.size,
                      Pins::Hold(pins_, sha256)};
}

void PullThroughCache::FileAsync(const FileRequest& r, AnswerCallback done) {
  if (!ServesIndex(r.index)) return done(Status::NotFound("no index " + r.index.substr(0, 100)));
  if (!upstream::IsSha256Hex(r.sha256)) {
    return done(Status::InvalidArgument("not a sha256: " + r.sha256.substr(0, 80)));
  }
  if (Status name = CheckPlainFileName(r.filename); !name.ok()) return done(name);
  if (r.metadata) return Metadata(r, std::move(done));
  ServeFile(r.index, r.sha256, r.filename, r.may_pull, std::move(done));
}

void PullThroughCache::ServeFile(const std::string& source, const std::string& sha256,
                                 const std::string& name, bool may_pull, AnswerCallback done,
                                 bool relisted) {
  FileDecision d;
  {
    std::lock_guard<std::mutex> lock(mu_);
    d = DecideFileLocked(source, sha256, name, may_pull, relisted, done);
  }
  switch (d.next) {
    case FileDecision::kAnswer:
      if (d.answer.ok()) Touch(sha256);
      return done(std::move(d.answer));
    case FileDecision::kShare:
      RecordStored(source, sha256, name, d.listing.size, d.share_metadata, "");
      {
        std::lock_guard<std::mutex> lock(mu_);
        d.answer = StoredAnswerLocked(source, sha256, name);
        if (d.answer.ok()) ++counts_.files_served;
      }
      return done(std::move(d.answer));
    case FileDecision::kWait:
      return;
    case FileDecision::kRelist:
      return Relist(source, sha256, name, may_pull, std::move(done));
    case FileDecision::kStart: {
      const std::string key = FlightKey(source, sha256);
      Schedule(
          d.listing.url,
          [this, key, source, sha256, name, listing = d.listing] {
            Finish(key, Download(source, sha256, name, listing));
          },
          [this, key](const Status& s) { Finish(key, s); });
      return;
    }
  }
}

PullThroughCache::FileDecision PullThroughCache::DecideFileLocked(const std::string& source,
                                                                  const std::string& sha256,
                                                                  const std::string& name,
                                                                  bool may_pull, bool relisted,
                                                                  const AnswerCallback& done) {
  FileDecision d;
  d.answer = StoredAnswerLocked(source, sha256, name);
  const Listed* listed = nullptr;
  if (auto by_sha = listed_.find(source); by_sha != listed_.end()) {
    auto it = by_sha->second.find(sha256);
    if (it != by_sha->second.end() && it->second.names.count(name) > 0) listed = &it->second;
  }
  if (d.answer.ok()) {
    ++counts_.files_served;
  } else if (listed == nullptr && !relisted && options_.indexes.count(source) > 0) {
    d.next = FileDecision::kRelist;
  } else if (listed == nullptr) {
    d.answer =
        Status::NotFound(source + " has not listed " + sha256 + " as " + name.substr(0, 200));
  } else if (UpstreamBlobLocked(sha256) && blobs_->Contains(sha256)) {
    DecideShareLocked(source, sha256, name, *listed, &d);
  } else if (!may_pull && !options_.anonymous_pulls) {
    ++counts_.pulls_refused;
    d.answer = Status::PermissionDenied(
        name.substr(0, 200) +
        " is not stored at farmd yet, and farmd downloads files only "
        "for workers and admins (send a worker's or an admin's token; or start farmd with "
        "--upstream-anonymous-pulls)");
  } else if (!HostAllowed(source, listed->url)) {
    d.answer = Status::PermissionDenied(
        source + " lists " + name.substr(0, 200) + " at " + upstream::UrlHost(listed->url) +
        ", not its own host: refused (farmd --upstream-allow-host names the hosts allowed)");
  } else {
    d.listing = *listed;
    std::shared_ptr<Flight>& flight = flights_[FlightKey(source, sha256)];
    d.next = flight ? FileDecision::kWait : FileDecision::kStart;
    if (!flight) flight = std::make_shared<Flight>();
    flight->waiters.push_back(AfterDownload(source, sha256, name, done));
  }
  return d;
}

// Bytes another index or tree downloaded (or an admin preloaded): an upstream's, served
// under this one's name too, with no second download.
void PullThroughCache::DecideShareLocked(const std::string& source, const std::string& sha256,
                                         const std::string& name, const Listed& listed,
                                         FileDecision* d) {
  d->next = FileDecision::kShare;
  d->listing = listed;
  bool downloaded = false;  // else only preloaded: shared as a preload, not accounted
  for (const auto& [other, by_sha] : stored_) {
    auto s = by_sha.find(sha256);
    if (s == by_sha.end()) continue;
    if (d->listing.size < 0) d->listing.size = s->second.size;
    if (s->second.preloaded) continue;
    downloaded = true;
    if (!s->second.metadata_sha256.empty()) d->share_metadata = s->second.metadata_sha256;
  }
  if (downloaded) return;
  Stored& shared = stored_[source][sha256];
  shared.names.insert(name);
  shared.size = d->listing.size;
  shared.preloaded = true;
  d->answer = StoredAnswerLocked(source, sha256, name);
  if (d->answer.ok()) ++counts_.files_served;
  d->next = FileDecision::kAnswer;
}

void PullThroughCache::Relist(const std::string& source, const std::string& sha256,
                              const std::string& name, bool may_pull, AnswerCallback done) {
  Result<std::string> project = ProjectOfDistribution(name);
  if (!project.ok()) {
    return done(
        Status::NotFound(source + " has not listed " + sha256 + " as " + name.substr(0, 200)));
  }
  Schedule(
      options_.indexes.at(source),
      [this, source, sha256, name, may_pull, done, project = *project] {
        (void)ProjectFiles(source, project, /*revalidate=*/false);  // learns its files
        ServeFile(source, sha256, name, may_pull, done, /*relisted=*/true);
      },
      [done](const Status& s) { done(s); });
}

std::function<void(Status)> PullThroughCache::AfterDownload(const std::string& source,
                                                            const std::string& sha256,
                                                            const std::string& name,
                                                            AnswerCallback done) {
  return [this, source, sha256, name, done = std::move(done)](Status s) {
    if (!s.ok()) return done(s);
    Result<MirrorAnswer> a = Status::Internal("unanswered");
    {
      std::lock_guard<std::mutex> lock(mu_);
      a = StoredAnswerLocked(source, sha256, name);
      if (a.ok()) ++counts_.files_served;
    }
    if (!a.ok()) a = Status::Unavailable(name + " was evicted before it was sent; ask again");
    done(std::move(a));
  };
}

Result<std::string> PullThroughCache::ListedUrl(const std::string& index,
                                                const std::string& sha256) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto by_sha = listed_.find(index); by_sha != listed_.end()) {
    if (auto it = by_sha->second.find(sha256); it != by_sha->second.end()) return it->second.url;
  }
  return Status::NotFound(index + " lists no file " + sha256);
}

void PullThroughCache::Finish(const std::string& key, const Status& status) {
  std::vector<std::function<void(Status)>> waiters;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = flights_.find(key);
    if (it == flights_.end()) return;
    waiters = std::move(it->second->waiters);
    flights_.erase(it);
  }
  for (auto& waiter : waiters) waiter(status);
}

void PullThroughCache::Metadata(const FileRequest& r, AnswerCallback done) {
  std::string upstream_digest, upstream_url, ours, kept;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto by_sha = listed_.find(r.index); by_sha != listed_.end()) {
      auto l = by_sha->second.find(r.sha256);
      if (l != by_sha->second.end() && l->second.names.count(r.filename) > 0) {
        upstream_digest = l->second.core_metadata_sha256;
        upstream_url = l->second.url + ".metadata";
      }
    }
    if (auto by_sha = stored_.find(r.index); by_sha != stored_.end()) {
      auto s = by_sha->second.find(r.sha256);
      if (s != by_sha->second.end() && s->second.names.count(r.filename) > 0) {
        ours = s->second.metadata_sha256;
      }
    }
    if (auto it = upstream_metadata_.find(upstream_digest); it != upstream_metadata_.end()) {
      kept = it->second;
    }
  }
  auto text_answer = [this](std::string text) {
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_.metadata_served;
    return MirrorAnswer{"application/octet-stream", std::move(text), "", -1, nullptr};
  };
  if (!upstream_digest.empty()) {
    if (!kept.empty()) return done(text_answer(std::move(kept)));
    if (!HostAllowed(r.index, upstream_url)) {
      return done(Status::PermissionDenied(r.index + " lists " + r.filename.substr(0, 200) +
                                           " on another host: refused"));
    }
    return FetchMetadata(upstream_url, upstream_digest, r.filename, std::move(done));
  }
  if (ours.empty() || accounting_ == nullptr) {
    return done(Status::NotFound("farmd serves no metadata file for " + r.filename.substr(0, 200) +
                                 " of " + r.index));
  }
  Result<std::optional<std::string>> text = accounting_->GetMirrorMetadata(r.sha256);
  if (!text.ok()) return done(text.status());
  if (!text->has_value() || Sha256Hex(**text) != ours) {
    return done(Status::NotFound("the metadata of " + r.filename.substr(0, 200) + " is gone"));
  }
  done(text_answer(std::move(**text)));
}

void PullThroughCache::FetchMetadata(const std::string& url, const std::string& digest,
                                     const std::string& filename, AnswerCallback done) {
  Schedule(
      url,
      [this, url, digest, filename, done] {
        Result<upstream::FetchedPage> page = fetcher_->GetPage(url, "", kMaxMetadataFile);
        if (!page.ok()) return done(page.status());
        std::string got = Sha256Hex(page->body);
        if (got != digest) {
          return done(Status::DataLoss("checksum mismatch for " + filename + ".metadata: the " +
                                       "index lists sha256 " + digest + ", got " + got +
                                       "; refused"));
        }
        {
          std::lock_guard<std::mutex> lock(mu_);
          if (upstream_metadata_bytes_ + page->body.size() > kMaxKeptMetadata) {
            upstream_metadata_.clear();
            upstream_metadata_bytes_ = 0;
          }
          upstream_metadata_bytes_ += page->body.size();
          upstream_metadata_[digest] = page->body;
          ++counts_.metadata_served;
        }
        done(MirrorAnswer{"application/octet-stream", std::move(page->body), "", -1, nullptr});
      },
      [done](const Status& s) { done(s); });
}

Status PullThroughCache::Download(const std::string& source, const std::string& sha256,
                                  const std::string& name, const Listed& file) {
  FARM_RETURN_IF_ERROR(fs::MakeDirs(options_.staging_dir, 0700));
  // Locked while it is written: a farmd killed mid-download leaves a file that the next
  // start's sweep knows to be nobody's (Start).
  const std::string temp = options_.staging_dir + "/" + kStagingPrefix + RandomHex(8);
  FARM_ASSIGN_OR_RETURN(store::LockedFile out, store::CreateLockedFile(temp));
  const std::string shown = log::RedactUrlCredentials(file.url);
  Sha256 hasher;
  int64_t bytes = 0;
  Status fetched = fetcher_->Download(file.url, [&](std::string_view block) -> Status {
    bytes += static_cast<int64_t>(block.size());
    if (file.size >= 0 && bytes > file.size) {
      return Status::DataLoss(name + " from " + shown + " is larger than listed");
    }
    hasher.Update(block);
    if (std::fwrite(block.data(), 1, block.size(), out.file) != block.size()) {
      return Status::ResourceExhausted("cannot write " + temp);
    }
    return Status::Ok();
  });
  const bool closed = std::fclose(out.file) == 0;
  auto done = [&](Status s) {
    std::remove(temp.c_str());
    ::close(out.lock_fd);
    return s;
  };
  if (!fetched.ok()) return done(fetched);
  if (!closed) return done(Status::ResourceExhausted("cannot write " + temp));
  std::string got = hasher.HexDigest();
  if (got != sha256 || (file.size >= 0 && bytes != file.size)) {
    return done(Status::DataLoss("checksum mismatch for " + name + " from " + shown +
                                 ": expected sha256 " + sha256 + ", got " + got +
                                 "; refused, nothing stored"));
  }
  auto [metadata_sha256, metadata] = WheelMetadata(temp, name);
  if (Status placed = Place(temp, sha256, bytes); !placed.ok()) return done(placed);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_.downloads;
  }
  RecordStored(source, sha256, name, bytes, metadata_sha256, metadata);
  return done(Status::Ok());
}

Status PullThroughCache::Place(const std::string& temp, const std::string& sha256, int64_t bytes) {
  FARM_ASSIGN_OR_RETURN(std::unique_ptr<store::BlobWriter> writer,
                        blobs_->BeginWrite(bytes, sha256));
  FILE* in = std::fopen(temp.c_str(), "rb");
  if (in == nullptr) return Status::Internal("cannot reopen " + temp);
  std::string buffer(1 << 20, '\0');
  Status s;
  while (s.ok()) {
    size_t n = std::fread(buffer.data(), 1, buffer.size(), in);
    if (n == 0) break;
    s = writer->Append(std::string_view(buffer.data(), n));
  }
  std::fclose(in);
  FARM_RETURN_IF_ERROR(s);
  return writer->Commit();
}

void PullThroughCache::RecordStored(const std::string& source, const std::string& sha256,
                                    const std::string& name, int64_t size,
                                    const std::string& metadata_sha256,
                                    const std::string& metadata) {
  bool counted = false;
  if (accounting_ != nullptr) {
    const int64_t now = clock_->NowUnixMs();
    Result<bool> fresh = accounting_->RecordMirrorFile(
        {sha256, std::max<int64_t>(size, 0), source, now, now, metadata_sha256}, name, metadata);
    if (!fresh.ok()) {
      log::Warn("pull-through cache: cannot record " + name + ": " + fresh.status().ToString());
    }
    counted = fresh.ok() && *fresh;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (accounting_ == nullptr) counted = !UpstreamBlobLocked(sha256);
    Stored& s = stored_[source][sha256];
    s.names.insert(name);
    if (s.size < 0) s.size = size;
    if (s.metadata_sha256.empty()) s.metadata_sha256 = metadata_sha256;
    if (counted) stored_bytes_ += std::max<int64_t>(size, 0);
  }
  EvictOverBound();
}

void PullThroughCache::Touch(const std::string& sha256) {
  if (accounting_ == nullptr) return;
  bool flush = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    uses_[sha256] = clock_->NowUnixMs();
    flush = uses_.size() >= kUsesPerFlush;
  }
  if (flush)
    Schedule(
        "", [this] { FlushUses(); }, [](const Status&) {});
}

void PullThroughCache::FlushUses() {
  if (accounting_ == nullptr) return;
  std::vector<std::pair<std::string, int64_t>> uses;
  {
    std::lock_guard<std::mutex> lock(mu_);
    uses.assign(uses_.begin(), uses_.end());
    uses_.clear();
  }
  if (Status s = accounting_->TouchMirrorBlobs(uses); !s.ok()) {
    log::Warn("pull-through cache: cannot record when files were served: " + s.ToString());
  }
}

void PullThroughCache::EvictOverBound() {
  if (accounting_ == nullptr || options_.max_bytes <= 0) return;
  FlushUses();  // least recently used as served, not as last recorded
  for (int round = 0; round < 1000; ++round) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stored_bytes_ <= options_.max_bytes) return;
    }
    Result<std::vector<store::MirrorBlobRow>> oldest = accounting_->ListMirrorBlobsByUse(64);
    if (!oldest.ok()) {
      log::Warn("pull-through cache: cannot list what to evict: " + oldest.status().ToString());
      return;
    }
    bool evicted = false;
    for (const store::MirrorBlobRow& row : *oldest) {
      // Under mu_: nothing is pinned or starts a flight of this blob meanwhile.
      std::lock_guard<std::mutex> lock(mu_);
      if (stored_bytes_ <= options_.max_bytes) return;
      if (pins_->Pinned(row.sha256)) continue;  // being served: kept until it is sent
      bool flying = false;
      for (const auto& [key, flight] : flights_) flying |= key.ends_with("\n" + row.sha256);
      if (flying) continue;
      Result<bool> named = accounting_->ForgetMirrorBlob(row.sha256);
      if (!named.ok()) continue;
      if (!*named) {
        if (Status removed = blobs_->Remove(row.sha256); !removed.ok()) {
          log::Warn("pull-through cache: cannot remove " + row.sha256 + ": " + removed.ToString());
        }
      }
      for (auto& [source, by_sha] : stored_) {
        auto s = by_sha.find(row.sha256);
        if (s != by_sha.end() && !s->second.preloaded) by_sha.erase(s);
      }
      stored_bytes_ -= row.size;
      ++counts_.evicted;
      evicted = true;
      log::Info("pull-through cache: evicted " + row.sha256.substr(0, 12) + " of " + row.source +
                " (" + fs::HumanBytes(row.size) + ", unused the longest) to stay under " +
                fs::HumanBytes(options_.max_bytes));
    }
    if (!evicted) return;  // all pinned or in flight: kept until the next download
  }
}

}  // namespace farm::mirror
