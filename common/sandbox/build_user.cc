#include "common/sandbox/build_user.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <vector>

namespace farm::sandbox {
namespace {

namespace stdfs = std::filesystem;

constexpr int kMaxEntries = 10'000'000;

// True, with its ids, when `name` is a user of this host.
bool LookUp(const std::string& name, uid_t* uid, gid_t* gid) {
  struct passwd pw;
  struct passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (::getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr) {
    return false;
  }
  *uid = found->pw_uid;
  *gid = found->pw_gid;
  return true;
}

bool ParseId(const std::string& text, uint32_t* out) {
  if (text.empty() || text.size() > 10) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > 0xfffffffeULL) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

Status Chown(const BuildUser& user, const std::string& path) {
  if (::lchown(path.c_str(), user.uid, user.gid) != 0) {
    return Status::Internal("giving " + path + " to the build user: " + std::strerror(errno));
  }
  return Status::Ok();
}

// Calls `visit` for `path` and, with `recursive`, everything below it (lstat'ed, links not
// followed), at most kMaxEntries entries.
Status Walk(const std::string& path, bool recursive,
            const std::function<Status(const std::string&, const struct stat&)>& visit) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return Status::Internal("cannot stat " + path + ": " + std::strerror(errno));
  }
  FARM_RETURN_IF_ERROR(visit(path, st));
  if (!recursive || !S_ISDIR(st.st_mode)) return Status::Ok();
  std::error_code ec;
  int n = 0;
  // The iterator never follows a link to a directory.
  for (auto it = stdfs::recursive_directory_iterator(path, ec);
       !ec && it != stdfs::recursive_directory_iterator(); it.increment(ec)) {
    std::string entry = it->path().string();
    if (::lstat(entry.c_str(), &st) != 0) {
      return Status::Internal("cannot stat " + entry + ": " + std::strerror(errno));
    }
    FARM_RETURN_IF_ERROR(visit(entry, st));
    if (++n > kMaxEntries) return Status::FailedPrecondition(path + " holds too many files");
  }
  if (ec) return Status::Internal("walking " + path + ": " + ec.message());
  return Status::Ok();
}

}  // namespace

Result<BuildUser> ResolveBuildUser(const std::string& spec, uid_t euid) {
  if (euid != 0) {
    if (spec.empty() || spec == "auto") return BuildUser{};
    return Status::InvalidArgument("--build-user " + spec +
                                   ": only a worker running as root can run builds as another "
                                   "user; this one runs them as itself");
  }
  BuildUser user;
  user.switches = true;
  if (spec.empty() || spec == "auto") {
    for (const char* name : {"farm-build", "nobody"}) {
      if (LookUp(name, &user.uid, &user.gid)) {
        user.name = name;
        break;
      }
    }
    if (user.name.empty()) {
      return Status::FailedPrecondition(
          "this host has neither a farm-build nor a nobody user for builds; name one with "
          "--build-user NAME or UID:GID");
    }
  } else if (size_t colon = spec.find(':'); colon != std::string::npos) {
    uint32_t uid = 0, gid = 0;
    if (!ParseId(spec.substr(0, colon), &uid) || !ParseId(spec.substr(colon + 1), &gid)) {
      return Status::InvalidArgument("--build-user must be auto, a user name or UID:GID, got \"" +
                                     spec + "\"");
    }
    user.uid = uid;
    user.gid = gid;
    user.name = spec;
  } else if (LookUp(spec, &user.uid, &user.gid)) {
    user.name = spec;
  } else {
    return Status::InvalidArgument("--build-user " + spec + ": no such user on this host");
  }
  if (user.uid == 0 || user.gid == 0) {
    return Status::InvalidArgument("--build-user " + user.name +
                                   " is root (uid or gid 0); builds must not run as root");
  }
  user.name += " (" + std::to_string(user.uid) + ":" + std::to_string(user.gid) + ")";
  return user;
}

Status GiveToBuildUser(const BuildUser& user, const std::string& path, bool recursive) {
  if (!user.switches) return Status::Ok();
  return Walk(path, recursive, [&user](const std::string& entry, const struct stat& st) {
    if (!S_ISDIR(st.st_mode) && st.st_nlink > 1 && st.st_uid != user.uid) return Status::Ok();
    return Chown(user, entry);
  });
}

Status TakeBackFromBuildUser(const BuildUser& user, const std::string& path) {
  if (!user.switches) return Status::Ok();
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  return Walk(path, true, [uid, gid](const std::string& entry, const struct stat& st) {
    if (::lchown(entry.c_str(), uid, gid) != 0) {
      return Status::Internal("taking back " + entry + ": " + std::strerror(errno));
    }
    // A link has no mode of its own; chmod would follow it.
    if (!S_ISLNK(st.st_mode) && (st.st_mode & 022) != 0 &&
        ::chmod(entry.c_str(), st.st_mode & 07755) != 0) {
      return Status::Internal("taking back " + entry + ": " + std::strerror(errno));
    }
    return Status::Ok();
  });
}

}  // namespace farm::sandbox
