// AddToCache and ListCache: an admin preloads farmd's pull-through cache from local files
// (`farmctl cache add`), for a farm whose upstreams are out of reach. The name is checked
// before a byte is read (mirror/preload.h), the bytes are hashed as they stream into the
// blob store's staging file and placed only when size and sha256 match, and the preload is
// recorded (migration 025) before the cache lists it.
#include <cstdio>

#include "common/archive/entry_rules.h"
#include "common/clock.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/upstream/simple_index.h"
#include "daemon/api/client/client_service.h"
#include "daemon/api/handler.h"
#include "daemon/mirror/preload.h"
#include "daemon/mirror/pull_through.h"
#include "daemon/model/convert.h"

namespace farm::api {
namespace {

using mirror::PreloadKind;

// Where a file goes: `path` of index or tree `source`.
struct Target {
  std::string source;
  std::string path;
  PreloadKind kind = PreloadKind::kIndexFile;
};

std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

// The preloaded manifest `name` of `tree`, read from the blob store.
Result<std::string> ReadManifest(const ServiceContext& ctx, const std::string& tree,
                                 const std::string& name) {
  auto sha = ctx.mirror->TreePathSha(tree, name);
  if (!sha.ok() || !name.ends_with(".json")) {
    return Status::FailedPrecondition("no manifest " + name.substr(0, 200) + " is preloaded in " +
                                      tree + ": add the manifest first");
  }
  FARM_ASSIGN_OR_RETURN(auto reader, ctx.blobs->OpenRead(*sha));
  if (reader->size() > mirror::kMaxManifestBytes) {
    return Status::FailedPrecondition(name + " is too large to be a manifest");
  }
  FARM_ASSIGN_OR_RETURN(std::string path, ctx.blobs->LocalPath(*sha));
  return fs::ReadFile(path);
}

// An archive must be the one the manifest lists: its name, sha256 and size.
Result<Target> ArchiveTarget(const ServiceContext& ctx, const farm::v1::CacheAddHeader& h) {
  FARM_ASSIGN_OR_RETURN(std::string manifest, ReadManifest(ctx, h.tree(), h.manifest()));
  FARM_ASSIGN_OR_RETURN(mirror::ManifestArchive listed,
                        mirror::FindManifestArchive(manifest, h.filename()));
  if (listed.sha256 != h.sha256() || (listed.size >= 0 && listed.size != h.size())) {
    return Status::FailedPrecondition(
        h.manifest() + " lists " + listed.relative_path + " with sha256 " + listed.sha256 +
        " and " + std::to_string(listed.size) + " bytes; this file has sha256 " + h.sha256() +
        " and " + std::to_string(h.size()) + " bytes: refused, nothing stored");
  }
  Target t{h.tree(), DirOf(h.manifest()) + listed.relative_path, PreloadKind::kArchive};
  std::string rule;
  if (!archives::CheckEntryName(t.path, &rule).empty()) {
    return Status::InvalidArgument("the manifest's path " + t.path.substr(0, 200) + " is refused");
  }
  return t;
}

// Checks everything the header says before a byte is read.
Result<Target> CheckHeader(const ServiceContext& ctx, const farm::v1::CacheAddHeader& h) {
  if (ctx.mirror == nullptr) {
    return Status::FailedPrecondition(
        "this farmd serves no upstreams to preload (farmd --upstream-index, --upstream-tree)");
  }
  FARM_RETURN_IF_ERROR(mirror::CheckPlainFileName(h.filename()));
  if (!upstream::IsSha256Hex(h.sha256())) {
    return Status::InvalidArgument("a file is announced by its sha256, 64 lowercase hex digits");
  }
  if (h.size() < 0 || h.size() > ctx.tunables.max_artifact_bytes) {
    return Status::InvalidArgument(
        h.filename() + ": " + std::to_string(h.size()) + " bytes is outside farmd's limit of " +
        std::to_string(ctx.tunables.max_artifact_bytes) + " bytes (--max-wheel-bytes)");
  }
  if (!h.index().empty() && !h.tree().empty()) {
    return Status::InvalidArgument("a file goes to an index or a tree, not both");
  }
  if (h.tree().empty()) {
    if (!h.manifest().empty()) return Status::InvalidArgument("a manifest goes with a tree");
    FARM_ASSIGN_OR_RETURN(std::string index, ctx.mirror->ResolveIndex(h.index()));
    FARM_RETURN_IF_ERROR(mirror::ProjectOfDistribution(h.filename()).status());
    return Target{index, h.filename(), PreloadKind::kIndexFile};
  }
  if (!ctx.mirror->ServesTree(h.tree())) {
    return Status::NotFound("farmd serves no upstream tree " + h.tree().substr(0, 200));
  }
  if (!h.manifest().empty()) return ArchiveTarget(ctx, h);
  if (!h.filename().ends_with(".json")) {
    return Status::InvalidArgument(h.filename() +
                                   ": a tree takes a redist manifest (.json), or an archive that a "
                                   "preloaded manifest lists (name the manifest)");
  }
  if (h.size() > mirror::kMaxManifestBytes) {
    return Status::InvalidArgument(h.filename() + " is too large to be a manifest");
  }
  return Target{h.tree(), h.filename(), PreloadKind::kManifest};
}

// The content check of a complete file: a distribution starts with its format's magic, a
// manifest parses and lists archives that stay inside the tree.
Status CheckContent(const Target& t, const std::string& file) {
  if (t.kind == PreloadKind::kArchive) return Status::Ok();  // its sha256 is the manifest's
  if (t.kind == PreloadKind::kManifest) {
    FARM_ASSIGN_OR_RETURN(std::string text, fs::ReadFile(file));
    return mirror::CheckManifest(text).WithContext(t.path + " was refused");
  }
  char head[4] = {};
  FILE* f = std::fopen(file.c_str(), "rb");
  if (f == nullptr) return Status::Internal("cannot read " + file);
  size_t n = std::fread(head, 1, sizeof(head), f);
  std::fclose(f);
  return mirror::CheckDistributionMagic(t.path, std::string_view(head, n));
}

// Streams the file into the blob store, unless its bytes are there already (then the
// stream is not read: the client's further writes fail and it reads this answer).
Result<int64_t> StoreBytes(const ServiceContext& ctx, const Target& t,
                           const farm::v1::CacheAddHeader& h,
                           grpc::ServerReader<farm::v1::CacheAdd>* in) {
  if (ctx.blobs->Contains(h.sha256())) {
    FARM_ASSIGN_OR_RETURN(std::string path, ctx.blobs->LocalPath(h.sha256()));
    FARM_RETURN_IF_ERROR(CheckContent(t, path));
    return int64_t{0};
  }
  FARM_ASSIGN_OR_RETURN(auto writer, ctx.blobs->BeginWrite(h.size(), h.sha256()));
  farm::v1::CacheAdd msg;
  while (in->Read(&msg)) {
    if (msg.part_case() != farm::v1::CacheAdd::kData) {
      return Status::InvalidArgument("only data may follow the header");
    }
    FARM_RETURN_IF_ERROR(writer->Append(msg.data()));
  }
  FARM_RETURN_IF_ERROR(
      writer->Commit([&t](const std::string& file) { return CheckContent(t, file); })
          .WithContext(h.filename()));
  return h.size();
}

Result<farm::v1::CacheAddResponse> Receive(const ServiceContext& ctx, const Principal& who,
                                           grpc::ServerReader<farm::v1::CacheAdd>* in) {
  farm::v1::CacheAdd msg;
  if (!in->Read(&msg) || !msg.has_header()) {
    return Status::InvalidArgument("a cache upload starts with its header");
  }
  const farm::v1::CacheAddHeader h = msg.header();
  FARM_ASSIGN_OR_RETURN(Target t, CheckHeader(ctx, h));
  farm::v1::CacheAddResponse resp;
  FARM_ASSIGN_OR_RETURN(auto held, ctx.store->GetUpstreamPreload(t.source, t.path));
  if (held && held->sha256 != h.sha256()) {
    return Status::AlreadyExists(t.source + "/" + t.path +
                                 " is preloaded with other content (sha256 " + held->sha256 +
                                 "); a name holds one file");
  }
  if (held) {
    *resp.mutable_file() = model::CachedFileToProto(*held);
    resp.set_already(true);
    return resp;
  }
  FARM_ASSIGN_OR_RETURN(int64_t received, StoreBytes(ctx, t, h, in));
  store::UpstreamPreloadRow row{.source = t.source,
                                .path = t.path,
                                .kind = std::string(mirror::PreloadKindName(t.kind)),
                                .sha256 = h.sha256(),
                                .size = h.size(),
                                .added_by = who.name,
                                .created_ms = ctx.clock->NowUnixMs()};
  FARM_ASSIGN_OR_RETURN(bool recorded, ctx.store->RecordUpstreamPreload(row));
  FARM_RETURN_IF_ERROR(ctx.mirror->AddPreloaded(t.source, t.kind, t.path, h.sha256(), h.size()));
  if (recorded) {
    log::Info("preloaded " + t.source + "/" + t.path + " (" + std::to_string(h.size()) +
              " bytes, sha256 " + h.sha256() + ") by " + who.name);
  }
  *resp.mutable_file() = model::CachedFileToProto(row);
  resp.set_already(!recorded);
  resp.set_received_bytes(received);
  return resp;
}

}  // namespace

grpc::Status ClientService::AddToCache(grpc::ServerContext* call,
                                       grpc::ServerReader<farm::v1::CacheAdd>* in,
                                       farm::v1::CacheAddResponse* resp) {
  audit::Entry entry{audit::Action::kCacheAdd, "upstream cache"};
  return HandleMutation(ctx_, call, Need::kAdmin, &entry, [&](const Principal& who) -> Status {
    FARM_ASSIGN_OR_RETURN(*resp, Receive(*ctx_, who, in));
    entry.target = resp->file().source() + "/" + resp->file().path();
    entry.done = resp->already() ? "already preloaded"
                                 : std::to_string(resp->received_bytes()) + " bytes received";
    return Status::Ok();
  });
}

grpc::Status ClientService::ListCache(grpc::ServerContext* call, const farm::v1::ListCacheRequest*,
                                      farm::v1::ListCacheResponse* resp) {
  return Handle(ctx_, call, Need::kViewer, [&](const Principal&) -> Status {
    FARM_ASSIGN_OR_RETURN(auto rows, ctx_->store->ListUpstreamPreloads());
    for (const store::UpstreamPreloadRow& row : rows)
      *resp->add_files() = model::CachedFileToProto(row);
    return Status::Ok();
  });
}

}  // namespace farm::api
