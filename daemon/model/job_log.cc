#include "daemon/model/job_log.h"

#include <algorithm>
#include <cctype>
#include <regex>

#include "common/strings.h"

namespace farm::model {
namespace {

constexpr size_t kMaxLineBytes = 400;
constexpr size_t kMaxLines = 8;
constexpr size_t kDiagnosticContext = 4;  // lines after a diagnostic (source, caret)

// A line longer than this is a command line, not a message (nvcc invocations run to
// thousands of bytes and name -Werror flags).
constexpr size_t kMaxMessageBytes = 2000;

// Whether `plain` holds any word the patterns below look for; most lines do not, and
// skipping the regular expressions for them keeps a page of 1,000 lines cheap.
bool MayMatter(const std::string& plain) {
  if (plain.size() > kMaxMessageBytes) return false;
  std::string lower = AsciiLower(plain);
  for (const char* word :
       {"error", "failed", "traceback", "undefined reference", "exception", "warn"}) {
    if (lower.find(word) != std::string::npos) return true;
  }
  return false;
}

// 3: a compiler diagnostic with a position ("x.cu(12): error: ...", "a.c:3:5: fatal
// error: ..."); 2: another error line; 0: none.
int ErrorScore(const std::string& raw) {
  if (!MayMatter(raw)) return 0;
  static const std::regex kDiagnostic(R"((\(\d+\)|:\d+(:\d+)?): (fatal )?error\b)");
  static const std::regex kError(
      R"(\berror\b|^\s*error[:\[]|^FAILED: |^Traceback \(most recent call last\)|undefined reference to|^\w*(Error|Exception): )",
      std::regex::icase);
  if (std::regex_search(raw, kDiagnostic)) return 3;
  if (std::regex_search(raw, kError)) return 2;
  return 0;
}

std::string Cut(std::string s) {
  if (s.size() > kMaxLineBytes) {
    size_t n = kMaxLineBytes;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;  // whole UTF-8
    s = s.substr(0, n) + "…";
  }
  return s;
}

bool Blank(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c); });
}

}  // namespace

std::string StripAnsi(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {
      i += 2;
      while (i < text.size() && !std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
      continue;
    }
    out.push_back(text[i]);
  }
  return out;
}

std::string LineLevel(const std::string& text) {
  std::string plain = StripAnsi(text);
  if (ErrorScore(plain) > 0) return "error";
  static const std::regex kWarning(R"(\bwarning\b|^\s*warn(ing)?[:\[])", std::regex::icase);
  if (MayMatter(plain) && std::regex_search(plain, kWarning)) return "warning";
  return "";
}

std::string LinePhase(int stream, const std::string& text) {
  if (stream != store::kLogStreamSystem) return "";
  static const std::pair<const char*, const char*> kMarkers[] = {
      {"farm: fetching source", "fetch"}, {"farm: provisions ", "provision"},
      {"farm: creating venv", "build"},   {"farm: checking ", "checks"},
      {"farm: validating", "validation"}, {"farm: uploading ", "upload"}};
  for (const auto& [prefix, phase] : kMarkers) {
    if (text.rfind(prefix, 0) == 0) return phase;
  }
  return "";
}

std::string FailurePhase(int cause, const std::string& detail) {
  auto starts = [&](const char* p) { return detail.rfind(p, 0) == 0; };
  switch (cause) {
    case store::kCauseBuildFailed:
      if (starts("provisioning ")) return "provision";  // a spec the provisioner refused
      return starts("labelling ") ? "checks" : "build";
    case store::kCauseTimedOut:
      return "build";
    case store::kCauseValidationFailed:
      return starts("validation failed") ? "validation" : "checks";
    case store::kCauseInfrastructure:
      if (starts("fetching source") || starts("applying") || starts("patch")) return "fetch";
      if (starts("uploading ")) return "upload";
      if (starts("validation could not run")) return "validation";
      if (starts("cannot create workspace")) return "setup";
      if (starts("provisioning ")) return "provision";
      return "build";
    default:
      return "";
  }
}

std::vector<std::string> MeaningfulLines(const std::vector<store::LogLineRow>& tail) {
  std::vector<std::string> plain;
  std::vector<int> score;
  for (const auto& l : tail) {
    if (l.stream == store::kLogStreamSystem) continue;  // the worker's own lines say less
    plain.push_back(StripAnsi(l.text));
    score.push_back(ErrorScore(plain.back()));
  }
  std::vector<std::string> out;
  auto best = std::max_element(score.begin(), score.end());  // the first of the best
  if (best == score.end() || *best == 0) {
    for (size_t i = plain.size(); i > 0 && out.size() < 6; --i) {
      if (!Blank(plain[i - 1])) out.insert(out.begin(), Cut(plain[i - 1]));
    }
    return out;
  }
  size_t first = static_cast<size_t>(best - score.begin());
  out.push_back(Cut(plain[first]));
  for (size_t i = first + 1; i < plain.size() && i <= first + kDiagnosticContext; ++i) {
    if (Blank(plain[i]) || score[i] == 3) break;
    out.push_back(Cut(plain[i]));
  }
  size_t last_error = first;
  for (size_t i = plain.size(); i > first + out.size(); --i) {
    if (score[i - 1] > 0) {
      last_error = i - 1;
      break;
    }
  }
  if (last_error != first && out.size() < kMaxLines) out.push_back(Cut(plain[last_error]));
  if (out.size() > kMaxLines) out.resize(kMaxLines);
  return out;
}

}  // namespace farm::model
