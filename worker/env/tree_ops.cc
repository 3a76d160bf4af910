#include "worker/env/tree_ops.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <set>
#include <utility>
#include <vector>

#include "common/fs.h"
#include "worker/env/failure.h"

namespace farm::env {
namespace {

// The names in directory `path`, without "." and "..".
Result<std::vector<std::string>> ListDir(const std::string& path) {
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return ErrnoStatus(errno, "cannot open directory", path);
  std::vector<std::string> names;
  while (dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  closedir(dir);
  return names;
}

// Calls `on_file(path, st)` for everything under `path` but directories (links included,
// never followed; `st` from lstat), depth first; the first error ends the walk.
template <typename OnFile>
Status ForEachFile(const std::string& path, const OnFile& on_file) {
  FARM_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(path));
  for (const std::string& name : names) {
    std::string child = path + "/" + name;
    struct stat st;
    if (lstat(child.c_str(), &st) != 0) return ErrnoStatus(errno, "cannot stat", child);
    FARM_RETURN_IF_ERROR(S_ISDIR(st.st_mode) ? ForEachFile(child, on_file) : on_file(child, st));
  }
  return Status::Ok();
}

Status MeasureInto(const std::string& path, std::set<std::pair<dev_t, ino_t>>* seen,
                   TreeSize* size) {
  return ForEachFile(path, [&](const std::string&, const struct stat& st) {
    if (S_ISREG(st.st_mode) && seen->insert({st.st_dev, st.st_ino}).second) {
      size->bytes += st.st_size;
      size->files += 1;
    }
    return Status::Ok();
  });
}

// Writes `text` as a new file `dst` with mode `mode`.
Status WriteNew(const std::string& dst, const std::string& text, mode_t mode) {
  int fd = open(dst.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode & 07777);
  if (fd < 0) return ErrnoStatus(errno, "cannot create", dst);
  Status s;
  for (size_t done = 0; done < text.size() && s.ok();) {
    ssize_t w = write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0)
      s = ErrnoStatus(errno, "cannot write", dst);
    else
      done += static_cast<size_t>(w);
  }
  if (close(fd) != 0 && s.ok()) s = ErrnoStatus(errno, "cannot close", dst);
  return s;
}

std::string ReplaceAll(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

struct CloneContext {
  std::string from_path;
  std::string to_path;
  bool try_reflink = true;
  CloneStats stats;
};

Status CloneFile(const std::string& src, const std::string& dst, const struct stat& st,
                 bool rewrite, CloneContext* ctx) {
  ctx->stats.files += 1;
  if (rewrite && st.st_size < (int64_t{8} << 20) && !ctx->from_path.empty()) {
    FARM_ASSIGN_OR_RETURN(std::string text, fs::ReadFile(src));
    if (text.find(ctx->from_path) != std::string::npos) {
      ctx->stats.rewritten += 1;
      return WriteNew(dst, ReplaceAll(std::move(text), ctx->from_path, ctx->to_path), st.st_mode);
    }
  }
  if (ctx->try_reflink) {
    int from = open(src.c_str(), O_RDONLY | O_CLOEXEC);
    if (from < 0) return ErrnoStatus(errno, "cannot open", src);
    int to = open(dst.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 07777);
    if (to < 0) {
      int err = errno;
      close(from);
      return ErrnoStatus(err, "cannot create", dst);
    }
    bool cloned = ioctl(to, FICLONE, from) == 0;
    close(from);
    close(to);
    if (cloned) {
      ctx->stats.reflinked += 1;
      return Status::Ok();
    }
    // The file system has no reflinks: hard-link this and every later file.
    ctx->try_reflink = false;
    if (unlink(dst.c_str()) != 0) return ErrnoStatus(errno, "cannot remove", dst);
  }
  if (link(src.c_str(), dst.c_str()) != 0) return ErrnoStatus(errno, "cannot link", dst);
  ctx->stats.linked += 1;
  return Status::Ok();
}

Status CloneDir(const std::string& src, const std::string& dst, const std::string& rel,
                CloneContext* ctx) {
  struct stat dir_st;
  if (stat(src.c_str(), &dir_st) != 0) return ErrnoStatus(errno, "cannot stat", src);
  if (mkdir(dst.c_str(), dir_st.st_mode & 07777) != 0) {
    return ErrnoStatus(errno, "cannot create directory", dst);
  }
  FARM_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(src));
  for (const std::string& name : names) {
    std::string from = src + "/" + name;
    std::string to = dst + "/" + name;
    std::string child_rel = rel.empty() ? name : rel + "/" + name;
    struct stat st;
    if (lstat(from.c_str(), &st) != 0) return ErrnoStatus(errno, "cannot stat", from);
    if (S_ISDIR(st.st_mode)) {
      FARM_RETURN_IF_ERROR(CloneDir(from, to, child_rel, ctx));
    } else if (S_ISLNK(st.st_mode)) {
      std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
      ssize_t n = readlink(from.c_str(), target.data(), target.size());
      if (n < 0) return ErrnoStatus(errno, "cannot read link", from);
      target.resize(static_cast<size_t>(n));
      if (!ctx->from_path.empty()) target = ReplaceAll(target, ctx->from_path, ctx->to_path);
      if (symlink(target.c_str(), to.c_str()) != 0) return ErrnoStatus(errno, "cannot link", to);
    } else if (S_ISREG(st.st_mode)) {
      bool rewrite = rel == "bin" || child_rel == "pyvenv.cfg";
      FARM_RETURN_IF_ERROR(CloneFile(from, to, st, rewrite, ctx));
    } else {
      return Status::InvalidArgument("special file in a snapshot: " + from);
    }
  }
  return Status::Ok();
}

}  // namespace

Result<TreeSize> MeasureTree(const std::string& path) {
  TreeSize size;
  std::set<std::pair<dev_t, ino_t>> seen;
  FARM_RETURN_IF_ERROR(MeasureInto(path, &seen, &size));
  return size;
}

Result<CloneStats> CloneTree(const std::string& src, const std::string& dst,
                             const std::string& from_path, const std::string& to_path) {
  CloneContext ctx;
  ctx.from_path = from_path;
  ctx.to_path = to_path;
  FARM_RETURN_IF_ERROR(CloneDir(src, dst, "", &ctx));
  return ctx.stats;
}

Status SealTree(const std::string& path) {
  return ForEachFile(path, [](const std::string& file, const struct stat& st) {
    if (S_ISREG(st.st_mode) && chmod(file.c_str(), st.st_mode & 07555) != 0) {
      return ErrnoStatus(errno, "cannot seal", file);
    }
    return Status::Ok();
  });
}

Status CheckSealedTree(const std::string& path, uid_t owner) {
  constexpr int kMaxEntries = 2'000'000;
  int n = 0;
  std::vector<std::string> pending = {path};
  while (!pending.empty()) {
    std::string at = std::move(pending.back());
    pending.pop_back();
    struct stat st;
    if (lstat(at.c_str(), &st) != 0) return ErrnoStatus(errno, "cannot stat", at);
    if (st.st_uid != owner || (S_ISREG(st.st_mode) && (st.st_mode & 0222) != 0) ||
        (S_ISDIR(st.st_mode) && (st.st_mode & 022) != 0)) {
      return Status::DataLoss("changed after it was sealed: " + at);
    }
    if (++n > kMaxEntries) return Status::DataLoss("too many files under " + path);
    if (!S_ISDIR(st.st_mode)) continue;
    FARM_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(at));
    for (std::string& name : names) pending.push_back(at + "/" + name);
  }
  return Status::Ok();
}

Status MergeTree(const std::string& src, const std::string& dst) {
  FARM_RETURN_IF_ERROR(fs::MakeDirs(dst));
  FARM_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(src));
  for (const std::string& name : names) {
    std::string from = src + "/" + name;
    std::string to = dst + "/" + name;
    struct stat from_st, to_st;
    if (lstat(from.c_str(), &from_st) != 0) return ErrnoStatus(errno, "cannot stat", from);
    bool exists = lstat(to.c_str(), &to_st) == 0;
    if (exists && S_ISDIR(from_st.st_mode) && S_ISDIR(to_st.st_mode)) {
      FARM_RETURN_IF_ERROR(MergeTree(from, to));
      continue;
    }
    if (exists) return Status::InvalidArgument("two archives both hold " + name + " at " + to);
    if (rename(from.c_str(), to.c_str()) != 0) return ErrnoStatus(errno, "cannot move", from);
  }
  return Status::Ok();
}

}  // namespace farm::env
