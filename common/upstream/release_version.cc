#include "common/upstream/release_version.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "common/strings.h"

namespace farm::upstream {
namespace {

// Reads decimal digits at `*pos` (at most 9, so the value fits an int); -1 when none.
int ReadNumber(std::string_view s, size_t* pos) {
  size_t start = *pos;
  while (*pos < s.size() && std::isdigit(static_cast<unsigned char>(s[*pos])) && *pos - start < 9) {
    ++*pos;
  }
  if (*pos == start) return -1;
  return std::stoi(std::string(s.substr(start, *pos - start)));
}

bool Consume(std::string_view s, size_t* pos, std::string_view word) {
  if (s.substr(*pos, word.size()) != word) return false;
  *pos += word.size();
  return true;
}

// The optional separator PEP 440 allows before a/b/rc/post/dev.
void SkipSeparator(std::string_view s, size_t* pos) {
  if (*pos < s.size() && (s[*pos] == '.' || s[*pos] == '-' || s[*pos] == '_')) ++*pos;
}

bool ReadPre(std::string_view s, size_t* pos, ReleaseVersion* v) {
  size_t at = *pos;
  SkipSeparator(s, &at);
  static constexpr std::pair<std::string_view, int> kKinds[] = {
      {"alpha", 0}, {"beta", 1}, {"rc", 2}, {"c", 2}, {"a", 0}, {"b", 1}};
  for (const auto& [word, kind] : kKinds) {
    if (!Consume(s, &at, word)) continue;
    SkipSeparator(s, &at);
    int n = ReadNumber(s, &at);
    v->pre_kind = kind;
    v->pre_number = n < 0 ? 0 : n;
    *pos = at;
    return true;
  }
  return false;
}

bool ReadTagged(std::string_view s, size_t* pos, std::string_view word, int* out) {
  size_t at = *pos;
  SkipSeparator(s, &at);
  if (!Consume(s, &at, word)) return false;
  SkipSeparator(s, &at);
  int n = ReadNumber(s, &at);
  *out = n < 0 ? 0 : n;
  *pos = at;
  return true;
}

int CompareRelease(const std::vector<int>& a, const std::vector<int>& b) {
  size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    int x = i < a.size() ? a[i] : 0;
    int y = i < b.size() ? b[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

// Whether v's release starts with the prefix's release ("==2.9.*").
bool PrefixMatches(const ReleaseVersion& v, const ReleaseVersion& prefix) {
  for (size_t i = 0; i < prefix.release.size(); ++i) {
    int x = i < v.release.size() ? v.release[i] : 0;
    if (x != prefix.release[i]) return false;
  }
  return true;
}

}  // namespace

std::string ReleaseVersion::Minor() const {
  int major = release.empty() ? 0 : release[0];
  int minor = release.size() > 1 ? release[1] : 0;
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string ReleaseVersion::Public() const {
  std::string out;
  for (size_t i = 0; i < release.size(); ++i) {
    out += (i ? "." : "") + std::to_string(release[i]);
  }
  static constexpr const char* kPre[] = {"a", "b", "rc"};
  if (pre_kind != 3) out += kPre[pre_kind] + std::to_string(pre_number);
  if (post >= 0) out += ".post" + std::to_string(post);
  if (dev >= 0) out += ".dev" + std::to_string(dev);
  return out;
}

std::optional<ReleaseVersion> ParseReleaseVersion(std::string_view text) {
  std::string lower = AsciiLower(TrimSpace(text));
  std::string_view s = lower;
  size_t pos = 0;
  Consume(s, &pos, "v");  // PEP 440 allows a leading "v"
  ReleaseVersion v;
  for (int i = 0; i < 8; ++i) {
    int n = ReadNumber(s, &pos);
    if (n < 0) return std::nullopt;
    v.release.push_back(n);
    if (pos + 1 < s.size() && s[pos] == '.' &&
        std::isdigit(static_cast<unsigned char>(s[pos + 1]))) {
      ++pos;
      continue;
    }
    break;
  }
  ReadPre(s, &pos, &v);
  ReadTagged(s, &pos, "post", &v.post);
  ReadTagged(s, &pos, "dev", &v.dev);
  if (pos < s.size() && s[pos] == '+') {
    v.local = std::string(s.substr(pos + 1));
    if (v.local.empty() || v.local.size() > 64 ||
        !std::all_of(v.local.begin(), v.local.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
        })) {
      return std::nullopt;
    }
    pos = s.size();
  }
  if (pos != s.size()) return std::nullopt;
  return v;
}

int CompareReleases(const ReleaseVersion& a, const ReleaseVersion& b) {
  if (int c = CompareRelease(a.release, b.release); c != 0) return c;
  // A developmental release of a final version sorts before its pre-releases.
  auto pre_key = [](const ReleaseVersion& v) {
    if (v.pre_kind == 3 && v.post < 0 && v.dev >= 0) return std::pair{-1, 0};
    return std::pair{v.pre_kind, v.pre_number};
  };
  if (pre_key(a) != pre_key(b)) return pre_key(a) < pre_key(b) ? -1 : 1;
  if (a.post != b.post) return a.post < b.post ? -1 : 1;
  // No .dev sorts after any .dev of the same version.
  int ad = a.dev < 0 ? INT32_MAX : a.dev;
  int bd = b.dev < 0 ? INT32_MAX : b.dev;
  if (ad != bd) return ad < bd ? -1 : 1;
  return 0;
}

Result<VersionSpec> VersionSpec::Parse(std::string_view text) {
  VersionSpec spec;
  spec.text_ = TrimSpace(text);
  std::string_view rest = spec.text_;
  for (int i = 0; i < 16 && !rest.empty(); ++i) {
    size_t comma = rest.find(',');
    std::string clause = TrimSpace(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    Clause c;
    for (const char* op : {">=", "<=", "==", "!=", "~=", ">", "<"}) {
      if (clause.rfind(op, 0) == 0) {
        c.op = op;
        break;
      }
    }
    if (c.op.empty()) {
      return Status::InvalidArgument("\"" + clause +
                                     "\" is not a version clause: use >=, >, <=, <, ==, != or "
                                     "~= and a version, such as \">=2.8\"");
    }
    std::string version = TrimSpace(clause.substr(c.op.size()));
    if ((c.op == "==" || c.op == "!=") && version.size() > 2 &&
        version.compare(version.size() - 2, 2, ".*") == 0) {
      c.wildcard = true;
      version.resize(version.size() - 2);
    }
    auto parsed = ParseReleaseVersion(version);
    if (!parsed || !parsed->local.empty() || (c.op == "~=" && parsed->release.size() < 2)) {
      return Status::InvalidArgument("\"" + clause + "\": \"" + version +
                                     "\" is not a release version such as 2.8 or 2.9.1");
    }
    c.version = *parsed;
    spec.clauses_.push_back(std::move(c));
  }
  if (!rest.empty()) return Status::InvalidArgument("too many clauses in \"" + spec.text_ + "\"");
  return spec;
}

bool VersionSpec::Matches(const ReleaseVersion& v) const {
  for (const Clause& c : clauses_) {
    int cmp = CompareReleases(v, c.version);
    bool ok = true;
    if (c.op == ">=") ok = cmp >= 0;
    if (c.op == ">") ok = cmp > 0;
    if (c.op == "<=") ok = cmp <= 0;
    if (c.op == "<") ok = cmp < 0;
    if (c.op == "==") ok = c.wildcard ? PrefixMatches(v, c.version) : cmp == 0;
    if (c.op == "!=") ok = c.wildcard ? !PrefixMatches(v, c.version) : cmp != 0;
    if (c.op == "~=") {
      ReleaseVersion prefix = c.version;
      prefix.release.pop_back();
      ok = cmp >= 0 && PrefixMatches(v, prefix);
    }
    if (!ok) return false;
  }
  return true;
}

}  // namespace farm::upstream
