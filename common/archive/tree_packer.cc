#include "common/archive/tree_packer.h"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>

#include "common/archive/entry_rules.h"
#include "common/archive/ignore_rules.h"
#include "common/fs.h"

namespace farm::archives {
namespace {

namespace stdfs = std::filesystem;

constexpr size_t kSinkChunk = 1 << 20;
constexpr int kMaxDepth = 256;

std::string Join(const std::string& dir, const std::string& name) {
  if (dir.empty() || name.empty()) return dir + name;
  return dir + "/" + name;
}

// The nearest directory at or above `dir` holding ".git" (a git work tree's root), or
// `dir` itself when there is none: git applies the .gitignore files from there down.
stdfs::path GitRoot(const stdfs::path& dir) {
  std::error_code ec;
  stdfs::path p = dir;
  for (int i = 0; i < 64; ++i) {
    if (stdfs::exists(p / ".git", ec)) return p;
    if (!p.has_parent_path() || p.parent_path() == p) break;
    p = p.parent_path();
  }
  return dir;
}

class Planner {
 public:
  Planner(const PackOptions& options, TreePlan* plan) : options_(options), plan_(plan) {}

  Status Run(const stdfs::path& root) {
    stdfs::path git_root = options_.gitignore ? GitRoot(root) : root;
    prefix_ = stdfs::relative(root, git_root).generic_string();
    if (prefix_ == ".") prefix_.clear();
    if (options_.gitignore && !prefix_.empty()) {
      // .gitignore files of the directories above the tree, inside the work tree.
      std::string base;
      FARM_RETURN_IF_ERROR(AddGitignore(git_root, ""));
      for (const stdfs::path& part : stdfs::path(prefix_)) {
        if (Join(base, part.string()) == prefix_) break;
        base = Join(base, part.string());
        FARM_RETURN_IF_ERROR(AddGitignore(git_root / base, base));
      }
    }
    // Never packed, whatever a .gitignore says.
    std::string forced = ".git\n";
    for (const std::string& e : options_.excludes) forced += e + "\n";
    forced_.Add(forced, prefix_);
    return Walk(root, "", 0);
  }

 private:
  Status AddGitignore(const stdfs::path& dir, const std::string& base) {
    std::error_code ec;
    stdfs::path file = dir / ".gitignore";
    if (!stdfs::is_regular_file(file, ec)) return Status::Ok();
    FARM_ASSIGN_OR_RETURN(std::string text, fs::ReadFile(file.string()));
    rules_.Add(text, base);
    return Status::Ok();
  }

  Status Walk(const stdfs::path& dir, const std::string& rel, int depth) {
    if (depth > kMaxDepth) return Status::InvalidArgument(rel + ": directories nest too deep");
    if (options_.gitignore) FARM_RETURN_IF_ERROR(AddGitignore(dir, Join(prefix_, rel)));
    std::vector<std::string> names;
    std::error_code ec;
    for (stdfs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      names.push_back(it->path().filename().string());
    }
    if (ec) return Status::Internal("cannot list " + dir.string() + ": " + ec.message());
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      FARM_RETURN_IF_ERROR(Visit(dir / name, Join(rel, name), depth));
    }
    return Status::Ok();
  }

  Status Visit(const stdfs::path& path, const std::string& rel, int depth) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
      return Status::FailedPrecondition(rel + " vanished while the tree was read");
    }
    bool is_dir = S_ISDIR(st.st_mode);
    std::string in_work_tree = Join(prefix_, rel);
    if (forced_.Ignored(in_work_tree, is_dir) || rules_.Ignored(in_work_tree, is_dir)) {
      plan_->ignored++;
      return Status::Ok();
    }
    if (static_cast<int64_t>(plan_->entries.size()) >= options_.max_entries) {
      return Status::ResourceExhausted("the source tree has more than " +
                                       std::to_string(options_.max_entries) + " entries");
    }
    TreeEntry e;
    e.path = rel;
    e.mtime = options_.mtime >= 0 ? options_.mtime : st.st_mtim.tv_sec;
    if (S_ISLNK(st.st_mode)) {
      std::error_code ec;
      e.kind = TreeEntry::kSymlink;
      e.target = stdfs::read_symlink(path, ec).string();
      if (ec || LinkEscapesTree(rel, e.target)) {
        return Status::InvalidArgument(
            rel + " is a symlink to '" + e.target +
            "', outside the tree: the workers would not have its target (exclude it, or "
            "put a copy in its place)");
      }
    } else if (S_ISREG(st.st_mode)) {
      e.kind = TreeEntry::kFile;
      e.size = st.st_size;
      e.executable = (st.st_mode & S_IXUSR) != 0;
      plan_->files++;
      plan_->file_bytes += st.st_size;
      sizes_[rel.substr(0, rel.find('/'))] += st.st_size;
    } else if (!is_dir) {
      return Status::InvalidArgument(rel +
                                     " is neither a file, a directory nor a symlink: "
                                     "exclude it");
    }
    e.kind = is_dir ? TreeEntry::kDirectory : e.kind;
    plan_->entries.push_back(std::move(e));
    if (is_dir) return Walk(path, rel, depth + 1);
    return Status::Ok();
  }

 public:
  // The top-level entries by size, largest first: what to exclude from a tree too large.
  std::string Largest() const {
    std::vector<std::pair<int64_t, std::string>> by_size;
    for (const auto& [name, size] : sizes_) by_size.emplace_back(size, name);
    std::sort(by_size.rbegin(), by_size.rend());
    std::string out;
    for (size_t i = 0; i < by_size.size() && i < 5; ++i) {
      out += (i ? ", " : "") + by_size[i].second + " " + fs::HumanBytes(by_size[i].first);
    }
    return out;
  }

 private:
  const PackOptions& options_;
  TreePlan* plan_;
  IgnoreRules forced_;  // .git and the caller's excludes
  IgnoreRules rules_;   // the .gitignore files
  std::string prefix_;  // the tree's path below the git work tree's root
  std::map<std::string, int64_t> sizes_;
};

// libarchive's output callbacks: bytes gathered into pieces of kSinkChunk for the sink.
struct SinkState {
  const ByteSink* sink = nullptr;
  std::string pending;
  Status status;
};

la_ssize_t WriteToSink(archive*, void* data, const void* buf, size_t n) {
  auto* s = static_cast<SinkState*>(data);
  if (!s->status.ok()) return -1;
  s->pending.append(static_cast<const char*>(buf), n);
  while (s->pending.size() >= kSinkChunk) {
    s->status = (*s->sink)(std::string_view(s->pending).substr(0, kSinkChunk));
    if (!s->status.ok()) return -1;
    s->pending.erase(0, kSinkChunk);
  }
  return static_cast<la_ssize_t>(n);
}

struct WriteHandle {
  archive* a = archive_write_new();
  ~WriteHandle() { archive_write_free(a); }
};

Status WriteFileData(archive* a, const std::string& path, const TreeEntry& e) {
  FILE* f = fopen(path.c_str(), "rb");
  if (f == nullptr) return Status::FailedPrecondition(e.path + " vanished while it was packed");
  std::vector<char> buf(256 * 1024);
  int64_t total = 0;
  Status status;
  for (size_t n; status.ok() && (n = fread(buf.data(), 1, buf.size(), f)) > 0;) {
    total += static_cast<int64_t>(n);
    if (total > e.size) break;
    if (archive_write_data(a, buf.data(), n) != static_cast<la_ssize_t>(n)) {
      const char* err = archive_error_string(a);
      status = Status::Internal("packing " + e.path + ": " + (err ? err : "write error"));
    }
  }
  bool read_error = ferror(f) != 0;
  fclose(f);
  FARM_RETURN_IF_ERROR(status);
  if (read_error) return Status::Internal("reading " + e.path + " failed");
  if (total != e.size) {
    return Status::FailedPrecondition(e.path + " changed while the tree was packed; try again");
  }
  return Status::Ok();
}

Status WriteEntry(archive* a, const TreePlan& plan, const TreeEntry& e) {
  archive_entry* entry = archive_entry_new();
  archive_entry_copy_pathname(entry, e.path.c_str());
  archive_entry_set_mtime(entry, e.mtime, 0);
  switch (e.kind) {
    case TreeEntry::kDirectory:
      archive_entry_set_filetype(entry, AE_IFDIR);
      archive_entry_set_perm(entry, 0755);
      break;
    case TreeEntry::kSymlink:
      archive_entry_set_filetype(entry, AE_IFLNK);
      archive_entry_set_perm(entry, 0777);
      archive_entry_copy_symlink(entry, e.target.c_str());
      break;
    case TreeEntry::kFile:
      archive_entry_set_filetype(entry, AE_IFREG);
      archive_entry_set_perm(entry, e.executable ? 0755 : 0644);
      archive_entry_set_size(entry, e.size);
      break;
  }
  int rc = archive_write_header(a, entry);
  archive_entry_free(entry);
  if (rc < ARCHIVE_WARN) {
    const char* err = archive_error_string(a);
    return Status::Internal("packing " + e.path + ": " + (err ? err : "header error"));
  }
  if (e.kind != TreeEntry::kFile) return Status::Ok();
  return WriteFileData(a, plan.root + "/" + e.path, e);
}

}  // namespace

Result<TreePlan> PlanTree(const std::string& dir, const PackOptions& options) {
  std::error_code ec;
  if (!stdfs::is_directory(dir, ec))
    return Status::NotFound("source directory " + dir + " does not exist");
  stdfs::path root = stdfs::canonical(dir, ec);
  if (ec) return Status::NotFound("cannot resolve " + dir + ": " + ec.message());
  TreePlan plan;
  plan.root = root.string();
  Planner planner(options, &plan);
  FARM_RETURN_IF_ERROR(planner.Run(root));
  if (plan.file_bytes > options.max_bytes) {
    return Status::ResourceExhausted(
        "the source tree " + dir + " holds " + fs::HumanBytes(plan.file_bytes) + " in " +
        std::to_string(plan.files) + " files, more than the limit of " +
        fs::HumanBytes(options.max_bytes) + "; largest: " + planner.Largest() +
        ". Leave out what the build does not need with .gitignore or --exclude");
  }
  return plan;
}

Status WriteTreeArchive(const TreePlan& plan, const ByteSink& sink) {
  // Declared before the handle so it outlives it: freeing an archive that was not closed
  // (an early return) still flushes through WriteToSink into `state`.
  SinkState state{&sink, {}, Status::Ok()};
  WriteHandle h;
  archive_write_set_format_pax_restricted(h.a);
  // Names are stored as the bytes they are on disk, whatever the locale.
  archive_write_set_format_option(h.a, "pax", "hdrcharset", "BINARY");
  archive_write_add_filter_zstd(h.a);
  archive_write_set_filter_option(h.a, "zstd", "compression-level", "3");
  // No zero padding after the compressed stream: the zstd reader takes it for a frame.
  archive_write_set_bytes_in_last_block(h.a, 1);
  if (archive_write_open2(h.a, &state, nullptr, WriteToSink, nullptr, nullptr) != ARCHIVE_OK) {
    const char* err = archive_error_string(h.a);
    return Status::Internal(std::string("cannot start the archive: ") + (err ? err : "?"));
  }
  for (const TreeEntry& e : plan.entries) {
    Status s = WriteEntry(h.a, plan, e);
    if (!s.ok()) return state.status.ok() ? s : state.status;
  }
  if (archive_write_close(h.a) != ARCHIVE_OK) {
    if (!state.status.ok()) return state.status;
    const char* err = archive_error_string(h.a);
    return Status::Internal(std::string("finishing the archive: ") + (err ? err : "?"));
  }
  FARM_RETURN_IF_ERROR(state.status);
  if (!state.pending.empty()) FARM_RETURN_IF_ERROR(sink(state.pending));
  return Status::Ok();
}

}  // namespace farm::archives
