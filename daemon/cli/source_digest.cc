#include <algorithm>
#include <filesystem>

#include "common/sha256.h"
#include "daemon/cli/commands.h"

namespace farm::cli {
namespace {

bool Skipped(const std::filesystem::path& p) {
  std::string name = p.filename().string();
  return name == ".git" || name == "build" || name == "dist" || name == "__pycache__" ||
         (name.size() > 9 && name.substr(name.size() - 9) == ".egg-info");
}

}  // namespace

Result<std::string> TreeDigest(const std::string& dir) {
  namespace stdfs = std::filesystem;
  std::error_code ec;
  if (!stdfs::is_directory(dir, ec)) return Status::NotFound("source directory " + dir + " does not exist");
  std::vector<std::string> files;
  auto it = stdfs::recursive_directory_iterator(dir, stdfs::directory_options::none, ec);
  for (; !ec && it != stdfs::recursive_directory_iterator(); it.increment(ec)) {
    if (Skipped(it->path())) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file()) files.push_back(stdfs::relative(it->path(), dir).string());
    if (files.size() > 200000) return Status::ResourceExhausted("source tree has too many files");
  }
  if (ec) return Status::Internal("cannot walk " + dir + ": " + ec.message());
  std::sort(files.begin(), files.end());
  Sha256 tree;
  for (const auto& f : files) {
    FARM_ASSIGN_OR_RETURN(std::string file_sha, Sha256FileHex(dir + "/" + f));
    tree.Update(f + "\n" + file_sha + "\n");
  }
  return tree.HexDigest();
}

}  // namespace farm::cli
