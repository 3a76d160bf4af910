#include "daemon/auth/secrets_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <string_view>

#include "common/fs.h"
#include "common/log.h"
#include "common/strings.h"

namespace farm::auth {
namespace {

const char* const kKnownKeys[] = {"GITHUB_TOKEN", "HF_TOKEN", "AWS_ACCESS_KEY_ID",
                                  "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"};

// Webhook targets' URLs (notify/webhooks.h): WEBHOOK_URL_ and the target's name.
constexpr std::string_view kWebhookPrefix = "WEBHOOK_URL_";

bool Known(const std::string& key) {
  for (const char* k : kKnownKeys) {
    if (key == k) return true;
  }
  if (!key.starts_with(kWebhookPrefix) || key.size() == kWebhookPrefix.size()) return false;
  return key.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", kWebhookPrefix.size()) ==
         std::string::npos;
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
  for (char** env = environ; env != nullptr && *env != nullptr; ++env) {
    std::string_view entry(*env);
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos || !entry.starts_with("FARM_")) continue;
    std::string key(entry.substr(5, eq - 5));
    std::string value(entry.substr(eq + 1));
    if (!key.starts_with(kWebhookPrefix) || !Known(key) || value.empty() || secrets->count(key)) {
      continue;
    }
    log::RegisterSecret(value);
    (*secrets)[key] = value;
  }
}

}  // namespace farm::auth
