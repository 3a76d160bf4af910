#include "common/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <boost/json.hpp>
#include <mutex>
#include <regex>
#include <vector>

namespace farm::log {
namespace {

std::mutex g_mu;
std::vector<std::string> g_secrets;  // guarded by g_mu
bool g_json = false;
std::string g_component = "farm";

spdlog::level::level_enum ToSpd(Level level) {
  switch (level) {
    case Level::kTrace:
      return spdlog::level::trace;
    case Level::kDebug:
      return spdlog::level::debug;
    case Level::kInfo:
      return spdlog::level::info;
    case Level::kWarn:
      return spdlog::level::warn;
    case Level::kError:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

// The text pattern and the JSON "component" field already name the component, so a
// message written as "farm-worker: ..." would read "farm-worker: farm-worker: ...".
std::string_view WithoutComponent(std::string_view message) {
  std::string prefix = g_component + ": ";
  if (message.substr(0, prefix.size()) == prefix) message.remove_prefix(prefix.size());
  return message;
}

}  // namespace

void InitLogging(const Options& options) {
  std::lock_guard lock(g_mu);
  g_json = options.json;
  g_component = options.component.empty() ? "farm" : options.component;
  auto logger = spdlog::stderr_color_mt(g_component + "-" +
                                        std::to_string(reinterpret_cast<uintptr_t>(&options)));
  spdlog::set_default_logger(logger);
  spdlog::set_level(ToSpd(options.level));
  if (g_json) {
    spdlog::set_pattern("%v");
  } else {
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ " + g_component + ": %v");
  }
}

void RegisterSecret(const std::string& secret) {
  if (secret.size() < 6) return;
  std::lock_guard lock(g_mu);
  for (const auto& s : g_secrets) {
    if (s == secret) return;
  }
  g_secrets.push_back(secret);
}

std::string Redact(std::string_view text) {
  std::string out(text);
  {
    std::lock_guard lock(g_mu);
    for (const auto& secret : g_secrets) {
      for (size_t pos = out.find(secret); pos != std::string::npos; pos = out.find(secret, pos)) {
        out.replace(pos, secret.size(), "[REDACTED]");
      }
    }
  }
  // Bearer tokens that were never registered (e.g. echoed by a remote server).
  static const std::regex kBearer(R"((Bearer|token)\s+[A-Za-z0-9_\-\.]{8,})", std::regex::icase);
  return RedactUrlCredentials(std::regex_replace(out, kBearer, "$1 [REDACTED]"));
}

std::string RedactUrlCredentials(std::string_view text) {
  // A scheme, "://", then a userinfo: anything up to the last '@' before the authority
  // ends ('/', '?', '#', whitespace or a quote). A password may itself hold '@' or ':'.
  std::string out;
  out.reserve(text.size());
  size_t at = 0;
  for (size_t sep = text.find("://"); sep != std::string_view::npos;
       sep = text.find("://", sep + 3)) {
    size_t start = sep + 3;
    size_t end = text.find_first_of("/?#\"'<> \t\r\n", start);
    if (end == std::string_view::npos) end = text.size();
    size_t last_at = text.rfind('@', end == 0 ? 0 : end - 1);
    if (last_at == std::string_view::npos || last_at <= start) continue;  // none, or empty
    out.append(text.substr(at, start - at));
    out.append("[REDACTED]");
    at = last_at;
  }
  out.append(text.substr(at));
  return out;
}

void Write(Level level, std::string_view message) {
  std::string text = Redact(WithoutComponent(message));
  if (g_json) {
    boost::json::object o;
    o["level"] = spdlog::level::to_string_view(ToSpd(level)).data();
    o["component"] = g_component;
    o["msg"] = text;
    spdlog::log(ToSpd(level), "{}", boost::json::serialize(o));
  } else {
    spdlog::log(ToSpd(level), "{}", text);
  }
}

}  // namespace farm::log
