#include "common/archive/ignore_rules.h"

namespace farm::archives {
namespace {

// Matches a bracket expression at p[pi] ('[') against c. Sets *next to the index after
// ']', or to npos for an unterminated bracket (which then is a literal '[').
bool MatchBracket(std::string_view p, size_t pi, unsigned char c, size_t* next) {
  size_t i = pi + 1;
  bool negate = i < p.size() && (p[i] == '!' || p[i] == '^');
  if (negate) ++i;
  bool matched = false;
  for (bool first = true; i < p.size() && (p[i] != ']' || first); first = false) {
    unsigned char lo = static_cast<unsigned char>(p[i]);
    if (lo == '\\' && i + 1 < p.size()) lo = static_cast<unsigned char>(p[++i]);
    ++i;
    unsigned char hi = lo;
    if (i + 1 < p.size() && p[i] == '-' && p[i + 1] != ']') {
      hi = static_cast<unsigned char>(p[i + 1]);
      i += 2;
    }
    if (lo <= c && c <= hi) matched = true;
  }
  if (i >= p.size()) {
    *next = std::string_view::npos;
    return false;
  }
  *next = i + 1;
  return matched != negate;
}

// Glob matching with backtracking bounded by the lengths involved (each '*' tries each
// split once per recursion level; '**' components recurse on component boundaries).
bool Match(std::string_view p, std::string_view t, int depth) {
  if (depth > 64) return false;
  size_t pi = 0, ti = 0;
  while (pi < p.size()) {
    // "**" as a whole component: "**/", "/**" at the end, or "/**/".
    bool at_component = pi == 0 || p[pi - 1] == '/';
    if (at_component && p.substr(pi, 2) == "**" && (pi + 2 == p.size() || p[pi + 2] == '/')) {
      if (pi + 2 == p.size()) return true;  // "a/**": everything below
      std::string_view rest = p.substr(pi + 3);
      // Zero or more whole components of t, then the rest of the pattern.
      for (size_t k = ti;;) {
        if (Match(rest, t.substr(k), depth + 1)) return true;
        size_t slash = t.find('/', k);
        if (slash == std::string_view::npos) return false;
        k = slash + 1;
      }
    }
    char c = p[pi];
    if (c == '*') {
      while (pi < p.size() && p[pi] == '*') ++pi;
      std::string_view rest = p.substr(pi);
      for (size_t k = ti; k <= t.size(); ++k) {
        if (Match(rest, t.substr(k), depth + 1)) return true;
        if (k < t.size() && t[k] == '/') return false;
      }
      return false;
    }
    if (ti >= t.size()) return false;
    if (c == '?') {
      if (t[ti] == '/') return false;
      ++pi, ++ti;
      continue;
    }
    if (c == '[') {
      size_t next = 0;
      bool ok = MatchBracket(p, pi, static_cast<unsigned char>(t[ti]), &next);
      if (next == std::string_view::npos) {  // no closing ']': a literal '['
        if (t[ti] != '[') return false;
        ++pi, ++ti;
        continue;
      }
      if (!ok || t[ti] == '/') return false;
      pi = next, ++ti;
      continue;
    }
    if (c == '\\' && pi + 1 < p.size()) c = p[++pi];
    if (t[ti] != c) return false;
    ++pi, ++ti;
  }
  return ti == t.size();
}

// Trailing spaces end a pattern unless escaped with a backslash.
std::string_view TrimTrailingSpaces(std::string_view line) {
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) {
    size_t keep = line.size() - 1;
    if (keep > 0 && line[keep - 1] == '\\' && line.back() == ' ') break;
    line.remove_suffix(1);
  }
  return line;
}

}  // namespace

bool GlobMatch(std::string_view pattern, std::string_view text) { return Match(pattern, text, 0); }

void IgnoreRules::Add(std::string_view text, const std::string& base) {
  size_t start = 0;
  for (int lines = 0; start < text.size() && lines < 100000; ++lines) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = TrimTrailingSpaces(text.substr(start, end - start));
    start = end + 1;
    if (line.empty() || line[0] == '#') continue;
    Pattern p;
    p.base = base;
    if (line[0] == '!') {
      p.negated = true;
      line.remove_prefix(1);
    } else if (line.size() >= 2 && line[0] == '\\' && (line[1] == '!' || line[1] == '#')) {
      line.remove_prefix(1);
    }
    if (!line.empty() && line.back() == '/') {
      p.dir_only = true;
      line.remove_suffix(1);
    }
    if (line.empty()) continue;
    p.anchored = line.find('/') != std::string_view::npos;
    if (line[0] == '/') line.remove_prefix(1);
    if (line.empty()) continue;
    p.glob = std::string(line);
    patterns_.push_back(std::move(p));
  }
}

bool IgnoreRules::Ignored(const std::string& path, bool is_dir) const {
  std::string_view name = path;
  size_t slash = name.rfind('/');
  if (slash != std::string_view::npos) name.remove_prefix(slash + 1);
  for (auto it = patterns_.rbegin(); it != patterns_.rend(); ++it) {
    const Pattern& p = *it;
    if (p.dir_only && !is_dir) continue;
    std::string_view below = path;
    if (!p.base.empty()) {
      if (path.size() <= p.base.size() || path.compare(0, p.base.size(), p.base) != 0 ||
          path[p.base.size()] != '/') {
        continue;
      }
      below.remove_prefix(p.base.size() + 1);
    }
    if (Match(p.glob, p.anchored ? below : name, 0)) return !p.negated;
  }
  return false;
}

}  // namespace farm::archives
