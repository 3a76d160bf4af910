// Operations on directory trees the provisioner owns: measuring, cloning a snapshot for a
// job (reflinks where the file system has them, else hard links), sealing a snapshot
// read-only, and merging unpacked archives into one tree. Symlinks are recreated as
// links, never followed; other special files are refused. Thread-compatible: callers
// give each tree to one caller at a time.
#ifndef FARM_WORKER_ENV_TREE_OPS_H_
#define FARM_WORKER_ENV_TREE_OPS_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "common/status.h"

namespace farm::env {

// Bytes of the regular files under `path` (each inode once), plus its file count.
struct TreeSize {
  int64_t bytes = 0;
  int64_t files = 0;
};
Result<TreeSize> MeasureTree(const std::string& path);

enum class CloneMethod { kReflink, kHardLink };

struct CloneStats {
  int64_t files = 0;
  int64_t reflinked = 0;
  int64_t linked = 0;
  int64_t rewritten = 0;  // files whose text named `from_path` and were copied with `to_path`
};

// Recreates the tree `src` at `dst` (which must not exist): directories are made, symlinks
// copied as links, regular files reflinked (FICLONE) or, where that fails, hard-linked, so
// the clone costs no data copy. Regular files under `rewrite_dirs` (relative, e.g. "bin",
// and single files such as "pyvenv.cfg") that contain `from_path` are instead written as
// new files with every occurrence replaced by `to_path` (a venv's scripts name its own
// location). On error `dst` may be partial: the caller removes it.
Result<CloneStats> CloneTree(const std::string& src, const std::string& dst,
                             const std::string& from_path, const std::string& to_path);

// Clears the write bits of every regular file under `path` (directories keep theirs, so
// the tree can still be removed). A hard-linked clone shares these inodes: writing one in
// place then fails for an unprivileged build instead of changing the snapshot.
Status SealTree(const std::string& path);

// OK when every entry under `path` still belongs to `owner` with no write bit for anyone on
// its files and none for group or others on its folders, as SealTree and the worker left
// it; DataLoss naming the first that is not (a snapshot something changed: its files may
// no longer be what its lock says).
Status CheckSealedTree(const std::string& path, uid_t owner);

// Moves every entry of `src` into `dst`, merging directories that exist on both sides;
// a file or link present on both sides fails with InvalidArgument naming it.
Status MergeTree(const std::string& src, const std::string& dst);

}  // namespace farm::env

#endif  // FARM_WORKER_ENV_TREE_OPS_H_
