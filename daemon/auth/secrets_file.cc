#include "daemon/auth/secrets_file.h"

#include <sys/stat.h>

#include <cstdlib>
#include <sstream>

#include "common/fs.h"
#include "common/log.h"
#include "common/utf8.h"

namespace farm::auth {
namespace {

const char* const kKnownKeys[] = {"GITHUB_TOKEN", "HF_TOKEN", "AWS_ACCESS_KEY_ID",
                                  "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"};

bool Known(const std::string& key) {
  for (const char* k : kKnownKeys) {
    if (key == k) return true;
  }
  return false;
}

}  // namespace

Result<Secrets> LoadSecretsFile(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Status::NotFound("no secrets file " + path);
  if (st.st_mode & 077) {
    return Status::FailedPrecondition("secrets file " + path +
                                      " is accessible to other users; chmod 600 it");
  }
  FARM_ASSIGN_OR_RETURN(std::string text, fs::ReadFile(path));
  Secrets secrets;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    line = TrimSpace(line);
    if (line.empty() || line[0] == '#') continue;
    size_t eq = line.find('=');
    std::string where = path + ":" + std::to_string(number) + ": ";
    if (eq == std::string::npos) return Status::InvalidArgument(where + "expected KEY=VALUE");
    std::string key = TrimSpace(line.substr(0, eq));
    // The value is never echoed: a malformed line may hold a token.
    if (!Known(key)) return Status::InvalidArgument(where + "unknown key \"" + key + "\"");
    std::string value = TrimSpace(line.substr(eq + 1));
    log::RegisterSecret(value);
    secrets[key] = value;
  }
  return secrets;
}

void AddSecretsFromEnvironment(Secrets* secrets) {
  for (const char* key : kKnownKeys) {
    const char* value = std::getenv(("FARM_" + std::string(key)).c_str());
    if (value && *value && !secrets->count(key)) {
      log::RegisterSecret(value);
      (*secrets)[key] = value;
    }
  }
}

}  // namespace farm::auth
