// farmctl cache add|list: preloading farmd's pull-through cache from local files (admin),
// for a farm whose upstreams are out of reach, and what was preloaded.
//
//   farmctl cache add torch-2.8.0+cu128-...whl numpy-...whl --index cu128
//   farmctl cache add --tree redist --manifest redistrib_12.8.1.json cuda_nvcc-...tar.xz ...
//
// Each file is hashed here, announced by its sha256 and size, and streamed in 1 MiB pieces;
// farmd hashes it again as it arrives and stores it only when both agree.
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/format.h"
#include "common/flags.h"
#include "common/fs.h"
#include "common/sha256.h"

namespace farm::cli {
namespace {

constexpr size_t kChunkBytes = 1 << 20;
constexpr char kCacheUsage[] =
    "usage: farmctl cache add FILE... [--index NAME|URL]\n"
    "       farmctl cache add --tree NAME [--manifest FILE|NAME] [ARCHIVE...]\n"
    "       farmctl cache list";

std::string BaseName(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

// Streams `path` to farmd as `header` (filename, size and sha256 filled in here).
Result<farm::v1::CacheAddResponse> Upload(const CommandEnv& env, const std::string& path,
                                          farm::v1::CacheAddHeader header) {
  int64_t size = 0;
  FARM_ASSIGN_OR_RETURN(std::string sha, Sha256FileHex(path, &size));
  header.set_filename(BaseName(path));
  header.set_size(size);
  header.set_sha256(sha);
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return Status::NotFound("cannot open " + path);
  auto ctx = env.client->Context(/*deadline=*/false);
  farm::v1::CacheAddResponse resp;
  auto writer = env.client->stub()->AddToCache(ctx.get(), &resp);
  farm::v1::CacheAdd msg;
  *msg.mutable_header() = header;
  bool open = writer->Write(msg);
  std::string buf(kChunkBytes, '\0');
  for (size_t n; open && (n = std::fread(buf.data(), 1, buf.size(), f)) > 0;) {
    msg.Clear();
    msg.set_data(buf.data(), n);
    open = writer->Write(msg);
  }
  std::fclose(f);
  writer->WritesDone();
  Status finished = FromGrpc(writer->Finish(), env.client->address());
  if (finished.code() == StatusCode::kDataLoss) {
    return Status::Aborted(path + " changed while it was uploaded (" + finished.message() + ")");
  }
  FARM_RETURN_IF_ERROR(finished.WithContext(path));
  return resp;
}

std::string Line(const farm::v1::CachedFile& f) {
  return f.source() + "/" + f.path() + "\t" + f.kind() + "\t" + fs::HumanBytes(f.size()) +
         "\tsha256 " + f.sha256().substr(0, 12) + "\t" + f.added_by() + " " + f.added_at() + "\n";
}

void Report(const CommandEnv& env, const farm::v1::CacheAddResponse& resp) {
  if (env.json) {
    *env.out << ToJson(resp) << "\n";
    return;
  }
  const farm::v1::CachedFile& f = resp.file();
  *env.out << (resp.already() ? "already preloaded: " : "preloaded: ") << f.source() << "/"
           << f.path() << " (" << fs::HumanBytes(f.size()) << ", sha256 " << f.sha256() << ")"
           << (resp.already() || resp.received_bytes() > 0 ? "" : ", bytes farmd had already")
           << "\n";
}

Status CacheAdd(const CommandEnv& env, const Flags& flags) {
  const std::vector<std::string>& args = flags.positionals();
  std::string tree = flags.Get("tree");
  std::string manifest = flags.Get("manifest");
  if (tree.empty() && flags.Has("manifest")) {
    return Status::InvalidArgument("--manifest goes with --tree");
  }
  if (!tree.empty() && flags.Has("index")) {
    return Status::InvalidArgument("--index and --tree: one or the other");
  }
  // With a tree, manifests (.json) go first: the archives name the one that lists them.
  std::vector<std::string> manifests, files;
  if (!manifest.empty() && std::filesystem::is_regular_file(manifest)) {
    manifests.push_back(manifest);
    manifest = BaseName(manifest);
  }
  for (size_t i = 2; i < args.size(); ++i) {
    (!tree.empty() && args[i].ends_with(".json") ? manifests : files).push_back(args[i]);
  }
  if (manifests.empty() && files.empty()) return Status::InvalidArgument(kCacheUsage);
  if (manifest.empty() && manifests.size() == 1) manifest = BaseName(manifests[0]);
  if (!files.empty() && !tree.empty() && manifest.empty()) {
    return Status::InvalidArgument("name the manifest that lists the archives (--manifest)");
  }
  farm::v1::CacheAddHeader header;
  header.set_index(flags.Get("index"));
  header.set_tree(tree);
  for (const std::string& path : manifests) {
    FARM_ASSIGN_OR_RETURN(auto resp, Upload(env, path, header));
    Report(env, resp);
  }
  if (!tree.empty()) header.set_manifest(manifest);
  for (const std::string& path : files) {
    if (!std::filesystem::is_regular_file(path)) return Status::NotFound(path + " is not a file");
    FARM_ASSIGN_OR_RETURN(auto resp, Upload(env, path, header));
    Report(env, resp);
  }
  return Status::Ok();
}

Status CacheList(const CommandEnv& env) {
  farm::v1::ListCacheResponse resp;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::ListCache, {}, &resp));
  if (env.json) {
    *env.out << ToJson(resp) << "\n";
    return Status::Ok();
  }
  if (resp.files().empty()) *env.out << "nothing preloaded\n";
  for (const farm::v1::CachedFile& f : resp.files()) *env.out << Line(f);
  return Status::Ok();
}

}  // namespace

Status CacheCommand(const CommandEnv& env, const Flags& flags) {
  const std::vector<std::string>& args = flags.positionals();
  std::string sub = args.size() > 1 ? args[1] : "";
  if (sub == "add") return CacheAdd(env, flags);
  if (sub == "list" && args.size() == 2) return CacheList(env);
  return Status::InvalidArgument(kCacheUsage);
}

}  // namespace farm::cli
