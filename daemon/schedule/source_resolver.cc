#include "daemon/schedule/source_resolver.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>

namespace farm::schedule {
namespace {

bool IsCommit(const std::string& s) {
  return s.size() == 40 && std::all_of(s.begin(), s.end(), [](unsigned char c) {
           return std::isdigit(c) || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

std::string PickRef(const std::string& output, const std::string& ref) {
  std::map<std::string, std::string> refs;
  std::istringstream in(output);
  std::string line;
  for (int i = 0; i < 1000000 && std::getline(in, line); ++i) {
    size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    std::string sha = line.substr(0, tab);
    if (IsCommit(sha)) refs[line.substr(tab + 1)] = sha;
  }
  for (const std::string& name :
       {"refs/heads/" + ref, "refs/tags/" + ref + "^{}", "refs/tags/" + ref, ref}) {
    auto it = refs.find(name);
    if (it != refs.end()) return it->second;
  }
  return "";
}

Result<std::string> GitSourceResolver::ResolveGitRef(const std::string& url,
                                                     const std::string& ref) {
  if (IsCommit(ref)) return ref;
  if (url.empty() || url[0] == '-' || ref.empty() || ref[0] == '-') {
    return Status::InvalidArgument("cannot resolve ref \"" + ref + "\" of \"" + url + "\"");
  }
  ProcessSpec spec;
  spec.argv = {"git", "ls-remote", "--", url, ref};
  // Never wait for a password prompt: farmd runs unattended.
  spec.env = {{"GIT_TERMINAL_PROMPT", "0"}, {"GIT_ASKPASS", "true"}, {"LC_ALL", "C"}};
  FARM_ASSIGN_OR_RETURN(CapturedOutput out, RunAndCapture(*runner_, spec, timeout_ms_));
  if (out.result.timed_out) {
    return Status::Unavailable("git ls-remote " + url + " timed out");
  }
  if (out.result.exit_code != 0) {
    std::string err = out.err.substr(0, 300);
    while (!err.empty() && std::isspace(static_cast<unsigned char>(err.back()))) err.pop_back();
    return Status::Unavailable("git ls-remote " + url + " failed (exit " +
                               std::to_string(out.result.exit_code) + "): " + err);
  }
  std::string sha = PickRef(out.out, ref);
  if (sha.empty()) return Status::NotFound("no ref \"" + ref + "\" in " + url);
  return sha;
}

}  // namespace farm::schedule
