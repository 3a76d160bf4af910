#include "common/git_policy.h"

#include <algorithm>
#include <cctype>

#include "common/strings.h"

namespace farm::git {
namespace {

constexpr size_t kMaxUrlLength = 2048;

const char kRemoteOnly[] = "git sources must be remote https:// URLs";

bool IsHostChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-';
}

// A DNS name or IPv4 address ([a-zA-Z0-9.-], not starting with '-' or '.'), or an IPv6
// address in brackets.
bool IsHost(const std::string& host) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    return std::all_of(host.begin() + 1, host.end() - 1, [](char c) {
      return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.';
    });
  }
  return !host.empty() && host.size() <= 253 && host[0] != '-' && host[0] != '.' &&
         std::all_of(host.begin(), host.end(), IsHostChar);
}

bool IsPort(const std::string& port) {
  if (port.empty() || port.size() > 5) return false;
  if (!std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  return std::stoi(port) > 0 && std::stoi(port) <= 65535;
}

bool IsUser(const std::string& user) {
  return !user.empty() && user[0] != '-' && std::all_of(user.begin(), user.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

// host[:port], the IPv6 form with brackets.
bool IsHostPort(const std::string& authority) {
  size_t colon = authority.rfind(':');
  if (colon != std::string::npos && authority.find(']', colon) == std::string::npos) {
    return IsHost(authority.substr(0, colon)) && IsPort(authority.substr(colon + 1));
  }
  return IsHost(authority);
}

// `url` with the user information of scheme://user:password@host/ replaced by "***", so
// no message repeats a password.
std::string Redacted(const std::string& url) {
  size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return url;
  size_t start = scheme_end + 3;
  size_t end = url.find('/', start);
  size_t at = url.rfind('@', end == std::string::npos ? std::string::npos : end);
  if (at == std::string::npos || at < start) return url;
  return url.substr(0, start) + "***" + url.substr(at);
}

Status Refused(const std::string& url, const std::string& why) {
  return Status::InvalidArgument("git URL \"" + Redacted(url) + "\" " + why);
}

// scheme://authority/path: the authority (no credentials) and a non-empty path.
Status CheckHierarchical(const std::string& url, size_t scheme_end, bool allow_user) {
  size_t start = scheme_end + 3;
  size_t slash = url.find('/', start);
  if (slash == std::string::npos || slash + 1 >= url.size()) {
    return Refused(url, "names no repository path");
  }
  std::string authority = url.substr(start, slash - start);
  size_t at = authority.find('@');
  if (at != std::string::npos) {
    if (!allow_user) return Refused(url, "carries credentials; the farm fetches without any");
    if (!IsUser(authority.substr(0, at))) return Refused(url, "has a malformed user name");
    authority = authority.substr(at + 1);
  }
  if (!IsHostPort(authority)) return Refused(url, "has a malformed host");
  return Status::Ok();
}

// user@host:path or host:path (git's scp-like ssh syntax).
Status CheckScpLike(const std::string& url, size_t colon) {
  std::string authority = url.substr(0, colon);
  std::string path = url.substr(colon + 1);
  size_t at = authority.find('@');
  if (at != std::string::npos) {
    if (!IsUser(authority.substr(0, at))) return Refused(url, "has a malformed user name");
    authority = authority.substr(at + 1);
  }
  if (!IsHost(authority)) return Refused(url, "has a malformed host");
  if (path.empty() || path[0] == '-') return Refused(url, "names no repository path");
  return Status::Ok();
}

}  // namespace

Status CheckGitUrl(const std::string& url, const GitPolicy& policy) {
  if (url.empty()) return Status::InvalidArgument("the git URL is empty");
  if (url.size() > kMaxUrlLength) {
    return Status::InvalidArgument("the git URL is longer than " + std::to_string(kMaxUrlLength) +
                                   " characters");
  }
  for (char c : url) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f || c == '\\') {
      return Refused(url, "holds a space, a control character, a backslash or non-ASCII");
    }
  }
  if (url[0] == '-') return Refused(url, "starts with '-'");
  const std::string lower = AsciiLower(url);
  if (lower.rfind("file:", 0) == 0) {
    return Refused(url, "reads the host's own disk; " + std::string(kRemoteOnly));
  }
  size_t scheme_end = url.find("://");
  size_t transport_end = url.find("::");
  if (transport_end != std::string::npos &&
      (scheme_end == std::string::npos || transport_end < scheme_end)) {
    return Refused(url, "uses git's " + url.substr(0, transport_end) +
                            ":: transport, which runs commands or reads the host; " + kRemoteOnly);
  }
  if (scheme_end != std::string::npos) {
    std::string scheme = url.substr(0, scheme_end);
    if (scheme == "https") return CheckHierarchical(url, scheme_end, false);
    if (scheme == "ssh") {
      if (!policy.allow_ssh) {
        return Refused(url, "uses ssh, which this farm does not allow (--git-ssh); " +
                                std::string(kRemoteOnly));
      }
      return CheckHierarchical(url, scheme_end, true);
    }
    return Refused(url, "uses the " + scheme + ":// transport; " + kRemoteOnly);
  }
  size_t colon = url.find(':');
  size_t slash = url.find('/');
  if (colon == std::string::npos || (slash != std::string::npos && slash < colon)) {
    return Refused(url, "is a local path; " + std::string(kRemoteOnly));
  }
  if (!policy.allow_ssh) {
    return Refused(url, "is an ssh address, which this farm does not allow (--git-ssh); " +
                            std::string(kRemoteOnly));
  }
  return CheckScpLike(url, colon);
}

std::map<std::string, std::string> LockedGitEnv(const GitPolicy& policy, const std::string& home) {
  std::map<std::string, std::string> env = {
      {"PATH", "/usr/local/bin:/usr/bin:/bin"},
      {"HOME", home},
      {"XDG_CONFIG_HOME", home},
      {"LC_ALL", "C"},
      {"GIT_CONFIG_NOSYSTEM", "1"},
      {"GIT_CONFIG_GLOBAL", "/dev/null"},
      {"GIT_TERMINAL_PROMPT", "0"},
      {"GIT_ASKPASS", "/bin/false"},
      {"SSH_ASKPASS", "/bin/false"},
      {"GIT_PROTOCOL_FROM_USER", "0"},
      {"GIT_ALLOW_PROTOCOL", policy.allow_ssh ? "https:ssh" : "https"},
      // Seconds, for ssh's own connect; the command as a whole is bounded by timeout_ms.
      {"GIT_SSH_COMMAND", "ssh -F /dev/null -o BatchMode=yes -o ConnectTimeout=20"},
  };
  if (!policy.ca_file.empty()) env["GIT_SSL_CAINFO"] = policy.ca_file;
  return env;
}

std::vector<std::string> LockedGitArgs(const GitPolicy& policy) {
  std::vector<std::string> args = {
      "-c", "credential.helper=",          "-c", "protocol.allow=never",
      "-c", "protocol.https.allow=always", "-c", "core.hooksPath=/dev/null",
      "-c", "init.templateDir=",           "-c", "core.fsmonitor=false",
      "-c", "submodule.recurse=false",     "-c", "http.lowSpeedLimit=1000",
      "-c", "http.lowSpeedTime=30",
  };
  if (policy.allow_ssh) args.insert(args.end(), {"-c", "protocol.ssh.allow=always"});
  return args;
}

std::string SanitizedGitError(const std::string& what, int exit_code, bool timed_out,
                              int64_t timeout_ms, const std::string& stderr_text) {
  if (timed_out) {
    return what + " timed out after " + std::to_string((timeout_ms + 999) / 1000) + " s";
  }
  const std::string err = AsciiLower(stderr_text.substr(0, 64 * 1024));
  struct Cause {
    const char* needle;
    const char* text;
  };
  static const Cause kCauses[] = {
      {"transport '", "the URL's transport is not allowed"},
      {"could not resolve host", "the host name does not resolve"},
      {"ssl certificate problem", "the server's TLS certificate is not trusted"},
      {"certificate verification", "the server's TLS certificate is not trusted"},
      {"host key verification failed", "the ssh host key is not known"},
      {"could not read username", "the repository needs credentials; the farm fetches without any"},
      {"authentication failed", "the repository needs credentials; the farm fetches without any"},
      {"permission denied", "the repository needs credentials; the farm fetches without any"},
      {"remote branch", "the ref does not exist in the repository"},
      {"repository not found", "the repository was not found"},
      {"not found", "the repository was not found"},
      {"does not appear to be a git repository", "the repository was not found"},
      {"connection refused", "the server refused the connection"},
      {"failed to connect", "the server cannot be reached"},
      {"couldn't connect", "the server cannot be reached"},
      {"network is unreachable", "the server cannot be reached"},
      {"operation too slow", "the transfer stalled"},
      {"timed out", "the transfer stalled"},
  };
  for (const Cause& c : kCauses) {
    if (err.find(c.needle) != std::string::npos) return what + " failed: " + c.text;
  }
  return what + " failed (exit " + std::to_string(exit_code) + ")";
}

}  // namespace farm::git
