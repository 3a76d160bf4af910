#include "cli/source_upload.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <set>

#include "common/archive/source_archive.h"
#include "common/archive/tree_packer.h"
#include "common/fs.h"
#include "common/process.h"
#include "common/recipe/cell_settings.h"
#include "common/recipe/matrix.h"
#include "common/recipe/recipe.h"
#include "common/sha256.h"
#include "common/utf8.h"

namespace farm::cli {
namespace {

namespace stdfs = std::filesystem;

constexpr size_t kChunkBytes = 1 << 20;

// One upload: the header, then whatever the producer writes.
class Uploader {
 public:
  explicit Uploader(const CommandEnv& env) : env_(env) {}

  // Asks farmd for the archive; uploads it with `produce` when farmd does not have it.
  // Returns the archive and how many bytes went over the network.
  Result<std::pair<farm::v1::SourceArchive, int64_t>> Run(
      const farm::v1::SourceUploadHeader& header,
      const std::function<Status(const archives::ByteSink&)>& produce) {
    farm::v1::FindSourceRequest find;
    find.set_sha256(header.sha256());
    farm::v1::FindSourceResponse found;
    FARM_RETURN_IF_ERROR(env_.client->Call(&FarmStub::FindSource, find, &found));
    farm::v1::SourceArchive archive;
    archive.set_sha256(header.sha256());
    archive.set_size(header.size());
    archive.set_origin(header.origin());
    if (found.stored()) return std::make_pair(archive, int64_t{0});
    auto ctx = env_.client->Context(/*deadline=*/false);
    farm::v1::SourceUploadResponse resp;
    auto writer = env_.client->stub()->UploadSource(ctx.get(), &resp);
    farm::v1::SourceUpload msg;
    *msg.mutable_header() = header;
    bool open = writer->Write(msg);
    Status produced = open ? produce([&](std::string_view piece) {
      msg.Clear();
      msg.set_data(piece.data(), piece.size());
      return writer->Write(msg) ? Status::Ok() : Status::Unavailable("farmd stopped reading");
    })
                           : Status::Ok();
    writer->WritesDone();
    Status finished = FromGrpc(writer->Finish(), address());
    if (finished.code() == StatusCode::kDataLoss) {
      return Status::Aborted("the source changed while it was uploaded (" + finished.message() +
                             "); submit again");
    }
    FARM_RETURN_IF_ERROR(finished);
    FARM_RETURN_IF_ERROR(produced);
    return std::make_pair(resp.archive(), resp.received_bytes());
  }

 private:
  const std::string& address() const { return env_.client->address(); }
  const CommandEnv& env_;
};

Status ForEachChunk(const std::string& path, const archives::ByteSink& sink) {
  FILE* f = fopen(path.c_str(), "rb");
  if (f == nullptr) return Status::NotFound("cannot open " + path);
  std::string buf(kChunkBytes, '\0');
  Status s;
  for (size_t n; s.ok() && (n = fread(buf.data(), 1, buf.size(), f)) > 0;) {
    s = sink(std::string_view(buf.data(), n));
  }
  fclose(f);
  return s;
}

// The validation script must be somewhere: beside the recipe (then it travels in the
// request) or in the source tree below the recipe's subdirectory.
Status CheckValidationScript(const farm::v1::Recipe& recipe, const std::vector<std::string>& files,
                             const std::string& where) {
  const std::string& script = recipe.validation().script();
  if (script.empty() || !recipe.validation().script_content().empty()) return Status::Ok();
  std::string rel = stdfs::path(recipe.subdirectory()) / script;
  rel = stdfs::path(rel).lexically_normal().generic_string();
  for (const std::string& f : files) {
    // A tarball's single top-level directory is unwrapped on the worker.
    size_t slash = f.find('/');
    if (f == rel || (slash != std::string::npos && f.substr(slash + 1) == rel)) {
      return Status::Ok();
    }
  }
  return Status::InvalidArgument("the validation script " + script +
                                 " is neither beside the recipe nor in the source (" + where +
                                 ", looked for " + rel + ")");
}

// The paths of `files` as the worker will see them: a tarball whose entries all sit in one
// top folder is unpacked with that folder as the root (`unwrap`); `*stripped` names it.
std::vector<std::string> UnpackedPaths(const std::vector<std::string>& files, bool unwrap,
                                       std::string* stripped) {
  std::set<std::string> tops;
  for (const std::string& f : files) tops.insert(f.substr(0, f.find('/')));
  bool one_folder = unwrap && tops.size() == 1 &&
                    std::any_of(files.begin(), files.end(),
                                [](const std::string& f) { return f.find('/') != f.npos; });
  if (!one_folder) return files;
  *stripped = *tops.begin();
  std::vector<std::string> out;
  for (const std::string& f : files) {
    size_t slash = f.find('/');
    if (slash != f.npos && slash + 1 < f.size()) out.push_back(f.substr(slash + 1));
  }
  return out;
}

// The recipe's subdirectory must be in the source: checked before anything is uploaded,
// saying what the tree's top level holds (and which folder a tarball loses).
Status CheckSubdirectory(const farm::v1::Recipe& recipe, const std::vector<std::string>& files,
                         bool unwrap, const std::string& where) {
  std::string sub = stdfs::path(recipe.subdirectory()).lexically_normal().generic_string();
  while (!sub.empty() && sub.back() == '/') sub.pop_back();
  if (sub.empty() || sub == ".") return Status::Ok();
  std::string stripped;
  std::vector<std::string> paths = UnpackedPaths(files, unwrap, &stripped);
  std::set<std::string> top;
  for (const std::string& f : paths) {
    if (f.rfind(sub + "/", 0) == 0) return Status::Ok();
    size_t slash = f.find('/');
    top.insert(slash == f.npos ? f : f.substr(0, slash + 1));
  }
  for (auto it = top.begin(); it != top.end();) {  // a directory's own entry: "csrc" of "csrc/"
    it = top.contains(*it + "/") ? top.erase(it) : std::next(it);
  }
  std::string listing;
  for (const std::string& t : top) {
    if (listing.size() > 400) {
      listing += ", ...";
      break;
    }
    listing += (listing.empty() ? "" : ", ") + t;
  }
  std::string why = "subdirectory " + recipe.subdirectory() + " is not in the source (" + where +
                    "); its top level holds: " + (listing.empty() ? "nothing" : listing);
  if (!stripped.empty()) {
    why += ". The tarball's single top folder " + stripped +
           "/ is stripped when it is unpacked, so subdirectory is relative to it";
    if (sub.rfind(stripped + "/", 0) == 0) {
      why += ": write subdirectory: " + sub.substr(stripped.size() + 1);
    } else if (sub == stripped) {
      why += ": leave subdirectory out";
    }
  }
  return Status::InvalidArgument(why);
}

struct Packed {
  farm::v1::SourceUploadHeader header;
  std::function<Status(const archives::ByteSink&)> produce;
  std::vector<std::string> files;
  std::string summary;  // "directory X, 37 files (1.2 MiB)"
};

// 1980-01-01T00:00:00Z, the oldest time a zip entry holds: the time of every file of a
// directory that is not in a git work tree.
constexpr int64_t kFixedSourceTime = 315'532'800;

// The modification time every file of a packed directory gets, so that two checkouts of
// one commit give the same archive and the worker's SOURCE_DATE_EPOCH (the newest time in
// the tree) does not depend on when the files were written: the commit time of the git
// work tree holding `dir`, else kFixedSourceTime.
int64_t DeclaredSourceTime(const std::string& dir) {
  RealProcessRunner runner;
  ProcessSpec spec{{"git", "-C", dir, "log", "-1", "--format=%ct"}};
  auto out = RunAndCapture(runner, spec, 30'000);
  if (out.ok() && out->result.exit_code == 0) {
    int64_t t = 0;
    auto [end, err] = std::from_chars(out->out.data(), out->out.data() + out->out.size(), t);
    if (err == std::errc() && t > 0) return t;
  }
  return kFixedSourceTime;
}

Result<Packed> PackDirectory(const Flags& flags, const std::string& dir) {
  archives::PackOptions options;
  options.mtime = DeclaredSourceTime(dir);
  options.excludes = flags.GetAll("exclude");
  options.gitignore = !flags.Has("no-gitignore");
  FARM_ASSIGN_OR_RETURN(options.max_bytes, flags.GetInt("max-source-bytes", options.max_bytes));
  auto plan = std::make_shared<archives::TreePlan>();
  FARM_ASSIGN_OR_RETURN(*plan, archives::PlanTree(dir, options));
  Sha256 hasher;
  int64_t size = 0;
  FARM_RETURN_IF_ERROR(archives::WriteTreeArchive(*plan, [&](std::string_view piece) {
    hasher.Update(piece);
    size += static_cast<int64_t>(piece.size());
    return Status::Ok();
  }));
  Packed p;
  p.header.set_sha256(hasher.HexDigest());
  p.header.set_size(size);
  p.summary = "directory " + stdfs::path(plan->root).filename().string() + ", " +
              std::to_string(plan->files) + " files (" + fs::HumanBytes(plan->file_bytes) +
              (plan->ignored > 0 ? ", " + std::to_string(plan->ignored) + " ignored" : "") + ")";
  p.summary = ToValidUtf8(p.summary);
  p.header.set_origin(p.summary);
  for (const archives::TreeEntry& e : plan->entries) p.files.push_back(e.path);
  p.produce = [plan](const archives::ByteSink& sink) {
    return archives::WriteTreeArchive(*plan, sink);
  };
  return p;
}

Result<Packed> PackTarball(const std::string& path) {
  Sha256 hasher;
  auto listing = archives::ScanSourceArchive(path, archives::SourceArchiveLimits(), &hasher);
  if (!listing.ok()) return listing.status().WithContext("tarball " + path);
  int64_t size = 0;
  FARM_ASSIGN_OR_RETURN(std::string again, Sha256FileHex(path, &size));
  std::string sha = hasher.HexDigest();
  if (again != sha) return Status::Aborted("tarball " + path + " changed while it was read");
  Packed p;
  p.header.set_sha256(sha);
  p.header.set_size(size);
  p.summary = "tarball " + stdfs::path(path).filename().string() + ", " +
              std::to_string(listing->files) + " files (" + fs::HumanBytes(listing->total_bytes) +
              ")";
  p.summary = ToValidUtf8(p.summary);
  p.header.set_origin(p.summary);
  p.files = std::move(listing->names);
  p.produce = [path](const archives::ByteSink& sink) { return ForEachChunk(path, sink); };
  return p;
}

// Packs and uploads a local directory or tarball; rewrites `source` to name the archive.
Status UploadLocalSource(const CommandEnv& env, const Flags& flags, const farm::v1::Recipe& recipe,
                         farm::v1::Source* source) {
  const bool dir = source->has_local_path();
  const std::string path = dir ? source->local_path() : source->tarball_path();
  FARM_ASSIGN_OR_RETURN(Packed packed, dir ? PackDirectory(flags, path) : PackTarball(path));
  FARM_RETURN_IF_ERROR(CheckSubdirectory(recipe, packed.files, !dir, path));
  FARM_RETURN_IF_ERROR(CheckValidationScript(recipe, packed.files, path));
  FARM_ASSIGN_OR_RETURN(auto uploaded, Uploader(env).Run(packed.header, packed.produce));
  const auto& [archive, sent] = uploaded;
  std::ostream& out = env.json ? *env.err : *env.out;
  out << "farmctl: source: " << packed.summary << ", archive " << fs::HumanBytes(archive.size())
      << ": " << fs::HumanBytes(sent) << " uploaded" << (sent == 0 ? ", already on farmd" : "")
      << " (sha256 " << archive.sha256() << ")\n";
  *source->mutable_archive() = archive;
  source->mutable_archive()->set_unwrap_single_directory(!dir);
  return Status::Ok();
}

void AddAxes(const Flags& flags, farm::v1::MatrixAxes* m) {
  for (const auto& v : flags.GetAll("python")) m->add_python(v);
  for (const auto& v : flags.GetAll("torch")) m->add_torch(v);
  for (const auto& v : flags.GetAll("cuda")) m->add_cuda(v);
  for (const auto& v : flags.GetAll("arch-list")) m->add_arch_lists(v);
  for (const auto& v : flags.GetAll("platform")) m->add_platform(v);
}

}  // namespace

Result<farm::v1::SubmitBuildRequest> PackRecipe(const CommandEnv& env, const Flags& flags,
                                                recipe::LoadedRecipe loaded) {
  farm::v1::Recipe& recipe = loaded.recipe;
  farm::v1::SubmitBuildRequest req;
  req.set_recipe_yaml(recipe.yaml());
  req.set_recipe_path(stdfs::path(loaded.path).filename().string());
  *req.mutable_source() = recipe.source();
  *req.mutable_patches() = recipe.patches();
  req.set_validation_script(recipe.validation().script_content());
  req.set_environment_lock(recipe.environment().lock());
  if (recipe.source().has_local_path() || recipe.source().has_tarball_path()) {
    FARM_RETURN_IF_ERROR(UploadLocalSource(env, flags, recipe, req.mutable_source()));
  }
  return req;
}

Result<farm::v1::SubmitBuildRequest> PrepareBuildRequest(const CommandEnv& env, const Flags& flags,
                                                         const std::string& recipe_path) {
  FARM_ASSIGN_OR_RETURN(recipe::LoadedRecipe loaded, recipe::LoadRecipeFile(recipe_path));
  farm::v1::Recipe& recipe = loaded.recipe;
  // --source-dir / --source-tarball build a local copy instead of the recipe's source
  // (a checkout with local changes, a mirror for hosts without network).
  if (flags.Has("source-dir")) {
    recipe.mutable_source()->set_local_path(stdfs::absolute(flags.Get("source-dir")).string());
  } else if (flags.Has("source-tarball")) {
    recipe.mutable_source()->set_tarball_path(
        stdfs::absolute(flags.Get("source-tarball")).string());
  }
  // The matrix is checked before anything is packed or uploaded: a request farmd would
  // refuse for its axes costs no upload.
  farm::v1::MatrixAxes axes;
  AddAxes(flags, &axes);
  FARM_RETURN_IF_ERROR(recipe::CheckBuildable(recipe::ExpandRecipe(axes, recipe)));
  std::vector<std::string> chain;
  FARM_ASSIGN_OR_RETURN(farm::v1::SubmitBuildRequest req, PackRecipe(env, flags, loaded));
  FARM_RETURN_IF_ERROR(AddRequirements(env, flags, loaded, &chain, &req));
  *req.mutable_matrix() = std::move(axes);
  FARM_ASSIGN_OR_RETURN(int64_t priority, flags.GetInt("priority", 0));
  req.set_priority(static_cast<int32_t>(priority));
  req.set_force(flags.Has("force"));
  return req;
}

}  // namespace farm::cli
