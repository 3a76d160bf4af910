// Logging facade over spdlog. Library code logs through these functions and never sees
// spdlog types; main() calls InitLogging once. Secrets are redacted before they are
// written: register every secret value with RegisterSecret.
#ifndef FARM_COMMON_LOG_H_
#define FARM_COMMON_LOG_H_

#include <string>
#include <string_view>

namespace farm::log {

enum class Level { kTrace, kDebug, kInfo, kWarn, kError };

struct Options {
  Level level = Level::kInfo;
  bool json = false;      // one JSON object per line instead of text
  std::string component;  // "farmd", "worker", "farmctl"
};

void InitLogging(const Options& options);

// Every later log line has each occurrence of `secret` replaced by "[REDACTED]".
// Secrets shorter than 6 characters are ignored (they would redact ordinary words).
void RegisterSecret(const std::string& secret);

// Returns `text` with every registered secret, every bearer token and the credentials of
// every URL (RedactUrlCredentials) redacted.
std::string Redact(std::string_view text);

// Returns `text` with the userinfo of every URL in it ("http://user:TOKEN@host/" ->
// "http://[REDACTED]@host/") replaced: the only way to give farmd a private index's
// credentials is such a URL, and its error texts, pages and logs must never repeat them.
std::string RedactUrlCredentials(std::string_view text);

// Writes one line. The line already names the component (InitLogging), so messages do
// not start with it; one that does ("farm-worker: ...") has that prefix removed.
void Write(Level level, std::string_view message);

inline void Trace(std::string_view m) { Write(Level::kTrace, m); }
inline void Debug(std::string_view m) { Write(Level::kDebug, m); }
inline void Info(std::string_view m) { Write(Level::kInfo, m); }
inline void Warn(std::string_view m) { Write(Level::kWarn, m); }
inline void Error(std::string_view m) { Write(Level::kError, m); }

}  // namespace farm::log

#endif  // FARM_COMMON_LOG_H_
