#include "daemon/cron/source_resolver.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>

namespace farm::cron {
namespace {

constexpr size_t kMaxOutputBytes = 1 << 20;

bool IsCommit(const std::string& s) {
  return s.size() == 40 && std::all_of(s.begin(), s.end(), [](unsigned char c) {
           return std::isdigit(c) || (c >= 'a' && c <= 'f');
         });
}

// Every "<sha>\t<name>" line of ls-remote output, as printed (peeled lines keep "^{}").
std::map<std::string, std::string> RawRefs(const std::string& output) {
  std::map<std::string, std::string> refs;
  std::istringstream in(output);
  std::string line;
  for (int i = 0; i < 1000000 && std::getline(in, line); ++i) {
    size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    std::string sha = line.substr(0, tab);
    if (IsCommit(sha)) refs[line.substr(tab + 1)] = sha;
  }
  return refs;
}

}  // namespace

std::map<std::string, std::string> ParseRefs(const std::string& output) {
  std::map<std::string, std::string> raw = RawRefs(output);
  std::map<std::string, std::string> refs;
  for (const auto& [name, sha] : raw) {
    if (name.size() > 3 && name.compare(name.size() - 3, 3, "^{}") == 0) {
      refs[name.substr(0, name.size() - 3)] = sha;
    } else if (!raw.count(name + "^{}")) {
      refs[name] = sha;
    }
  }
  return refs;
}

std::string PickRef(const std::string& output, const std::string& ref) {
  std::map<std::string, std::string> refs = RawRefs(output);
  for (const std::string& name :
       {"refs/heads/" + ref, "refs/tags/" + ref + "^{}", "refs/tags/" + ref, ref}) {
    auto it = refs.find(name);
    if (it != refs.end()) return it->second;
  }
  return "";
}

Result<std::string> GitSourceResolver::LsRemote(const std::string& url,
                                                const std::vector<std::string>& options,
                                                const std::vector<std::string>& patterns) {
  if (!enabled_) {
    return Status::FailedPrecondition(
        "this farm does not resolve git refs (farmd --no-git-resolve): name the full 40-hex "
        "commit to build");
  }
  ProcessSpec spec;
  spec.argv = {"git"};
  for (const std::string& arg : git::LockedGitArgs(policy_)) spec.argv.push_back(arg);
  spec.argv.push_back("ls-remote");
  spec.argv.insert(spec.argv.end(), options.begin(), options.end());
  spec.argv.insert(spec.argv.end(), {"--", url});
  spec.argv.insert(spec.argv.end(), patterns.begin(), patterns.end());
  // Never a prompt, a credential or the farmd user's configuration: farmd runs unattended
  // on a URL a submitter wrote.
  spec.env = git::LockedGitEnv(policy_, "/nonexistent");
  spec.clear_env = true;
  spec.kill_grace_ms = 1000;
  FARM_ASSIGN_OR_RETURN(auto process, runner_->Start(spec));
  // Kept bounded: a server decides how much git prints.
  std::string out, err;
  ProcessResult r = process->Wait(
      [&out, &err](OutputStream stream, const std::string& line) {
        std::string& into = stream == OutputStream::kStdout ? out : err;
        if (into.size() < kMaxOutputBytes) into += line + "\n";
      },
      policy_.timeout_ms);
  if (r.timed_out || r.exit_code != 0) {
    return Status::Unavailable(
        git::SanitizedGitError("git ls-remote", r.exit_code, r.timed_out, policy_.timeout_ms, err));
  }
  return out;
}

Result<std::string> GitSourceResolver::ResolveGitRef(const std::string& url,
                                                     const std::string& ref) {
  FARM_RETURN_IF_ERROR(git::CheckGitUrl(url, policy_));
  if (IsCommit(ref)) return ref;
  if (ref.empty() || ref[0] == '-') {
    return Status::InvalidArgument("cannot resolve ref \"" + ref + "\" of \"" + url + "\"");
  }
  FARM_ASSIGN_OR_RETURN(std::string out, LsRemote(url, {}, {ref}));
  std::string sha = PickRef(out, ref);
  if (sha.empty()) return Status::NotFound("no ref \"" + ref + "\" in " + url);
  return sha;
}

Result<std::map<std::string, std::string>> GitSourceResolver::ListRefs(const std::string& url) {
  FARM_RETURN_IF_ERROR(git::CheckGitUrl(url, policy_));
  FARM_ASSIGN_OR_RETURN(std::string out, LsRemote(url, {"--heads", "--tags"}, {}));
  return ParseRefs(out);
}

}  // namespace farm::cron
