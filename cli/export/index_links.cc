#include "cli/export/index_links.h"

#include <algorithm>
#include <boost/json.hpp>
#include <vector>

#include "common/utf8.h"

namespace farm::cli::exporter {

namespace json = boost::json;

namespace {

constexpr size_t kMaxPathBytes = 2048;
constexpr size_t kMaxSegmentBytes = 255;
constexpr size_t kMaxSegments = 16;

bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f'); }
// ASCII only: ::tolower of a negative char (a byte past 127) is undefined.
char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// The length of `ref`'s scheme including its ':' (RFC 3986: ALPHA *( ALPHA / DIGIT / "+" /
// "-" / "." ) ":"), or 0 when it has none.
size_t SchemeLength(std::string_view ref) {
  if (ref.empty() || !IsAlpha(ref[0])) return 0;
  for (size_t i = 1; i < ref.size(); ++i) {
    char c = ref[i];
    if (c == ':') return i + 1;
    if (!IsAlpha(c) && !IsDigit(c) && c != '+' && c != '-' && c != '.') return 0;
  }
  return 0;
}

struct Parts {
  std::string_view path, query, fragment;  // query and fragment keep their '?' / '#'
};

Parts SplitRef(std::string_view ref) {
  Parts p;
  size_t hash = ref.find('#');
  if (hash != ref.npos) p.fragment = ref.substr(hash), ref = ref.substr(0, hash);
  size_t q = ref.find('?');
  if (q != ref.npos) p.query = ref.substr(q), ref = ref.substr(0, q);
  p.path = ref;
  return p;
}

// RFC 3986 section 5.2.4.
std::string RemoveDotSegments(std::string_view in) {
  std::vector<std::string_view> out;
  bool absolute = in.starts_with('/');
  bool trailing = false;
  size_t pos = absolute ? 1 : 0;
  while (pos <= in.size()) {
    size_t slash = in.find('/', pos);
    std::string_view seg = in.substr(pos, slash == in.npos ? in.npos : slash - pos);
    bool last = slash == in.npos;
    if (seg == "..") {
      if (!out.empty()) out.pop_back();
      trailing = true;
    } else if (seg == ".") {
      trailing = true;
    } else {
      out.push_back(seg);
      trailing = false;
    }
    if (last) break;
    pos = slash + 1;
  }
  std::string result = absolute ? "/" : "";
  for (size_t i = 0; i < out.size(); ++i) {
    if (i > 0) result += '/';
    result += out[i];
  }
  if (trailing && !result.ends_with('/')) result += '/';
  return result;
}

// Scheme and authority of an absolute URL ("http://h:1"), and the rest.
std::pair<std::string, std::string_view> SplitOrigin(std::string_view url) {
  size_t scheme = SchemeLength(url);
  if (scheme == 0 || url.substr(scheme, 2) != "//") return {"", url};
  size_t end = url.find_first_of("/?#", scheme + 2);
  if (end == url.npos) end = url.size();
  std::string origin(url.substr(0, end));
  std::transform(origin.begin(), origin.begin() + static_cast<long>(scheme), origin.begin(), Lower);
  return {origin, url.substr(end)};
}

bool SafeByte(char c) {
  return IsAlpha(c) || IsDigit(c) || c == '.' || c == '_' || c == '+' || c == '!' || c == '~' ||
         c == '-';
}

// The value of an attribute as HTML means it: the entities farmd writes (&amp; &lt; &gt;
// &quot; &#39; and numeric ones below 128) decoded; any other '&' is kept as it is.
std::string HtmlDecode(std::string_view s) {
  static constexpr std::pair<std::string_view, char> kNamed[] = {
      {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out += s[i];
      continue;
    }
    bool done = false;
    for (const auto& [name, c] : kNamed) {
      if (s.substr(i, name.size()) == name) {
        out += c, i += name.size() - 1, done = true;
        break;
      }
    }
    size_t semi = s.find(';', i);
    if (!done && s.substr(i, 2) == "&#" && semi != s.npos && semi - i <= 8) {
      std::string_view num = s.substr(i + 2, semi - i - 2);
      bool hex = !num.empty() && (num[0] == 'x' || num[0] == 'X');
      if (hex) num.remove_prefix(1);
      int value = 0;
      bool ok = !num.empty();
      for (char c : num) {
        int d = IsDigit(c) ? c - '0' : hex && IsHex(Lower(c)) ? Lower(c) - 'a' + 10 : -1;
        if (d < 0 || value > 1000) ok = false;
        if (d >= 0) value = value * (hex ? 16 : 10) + d;
      }
      if (ok && value > 0 && value < 128) out += static_cast<char>(value), i = semi, done = true;
    }
    if (!done) out += '&';
  }
  return out;
}

bool IsLinkAttribute(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), Lower);
  return lower == "href" || lower == "src" || lower == "data-provenance";
}

bool IsAttrNameByte(char c) {
  return c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '/' && c != '>' &&
         c != '=' && c != '"' && c != '\'';
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

// Rewrites the tag that opens at html[lt] into `out`; returns the index past its '>'. The
// tag ends at the first '>' outside an attribute value as this parser reads the values,
// so where a tag ends and which attributes it has are decided by one grammar.
Result<size_t> RewriteTag(std::string_view html, size_t lt, std::string_view page_dir,
                          const LinkRewriter& links, std::string& out) {
  size_t i = lt + 1;
  while (i < html.size() && !IsSpace(html[i]) && html[i] != '>' && html[i] != '/') ++i;
  out += html.substr(lt, i - lt);
  while (i < html.size()) {
    if (html[i] == '>') {
      out += '>';
      return i + 1;
    }
    size_t start = i;
    while (i < html.size() && (IsSpace(html[i]) || html[i] == '/')) ++i;
    size_t name_start = i;
    while (i < html.size() && IsAttrNameByte(html[i])) ++i;
    std::string_view name = html.substr(name_start, i - name_start);
    if (i < html.size() && html[i] != '>' && name.empty()) {
      // A stray '=' or quote: browsers and parsers disagree on what follows, and once a
      // link next to it is dropped, it would be read differently. farmd writes none.
      return Status::InvalidArgument("a tag has a stray " + std::string(1, html[i]));
    }
    if (name.empty()) {  // the spaces before '>'
      out += html.substr(start, i - start);
      continue;
    }
    size_t j = i;
    while (j < html.size() && IsSpace(html[j])) ++j;
    std::string_view value;
    bool has_value = j < html.size() && html[j] == '=';
    if (has_value) {
      ++j;
      while (j < html.size() && IsSpace(html[j])) ++j;
      if (j < html.size() && (html[j] == '"' || html[j] == '\'')) {
        size_t close = html.find(html[j], j + 1);
        if (close == html.npos) return Status::InvalidArgument("an attribute value never closes");
        value = html.substr(j + 1, close - j - 1);
        i = close + 1;
      } else {
        size_t end = j;
        while (end < html.size() && !IsSpace(html[end]) && html[end] != '>') ++end;
        value = html.substr(j, end - j);
        i = end;
      }
    }
    if (!has_value || !IsLinkAttribute(name)) {
      out += html.substr(start, i - start);
      continue;
    }
    FARM_ASSIGN_OR_RETURN(auto link, links.Rewrite(page_dir, HtmlDecode(value)));
    // The separator stays even when the attribute goes, so that what follows is never
    // read as part of the tag's name or of another attribute.
    out += html.substr(start, name_start - start);
    if (link) out += std::string(name) + "=\"" + EscapeMarkup(*link) + "\"";
  }
  return Status::InvalidArgument("a tag never closes");
}

// Rewrites the JSON string `s` in place as a link; a link the export lacks is an error.
Status RewriteJsonLink(json::value& s, std::string_view page_dir, const LinkRewriter& links) {
  std::string text(s.get_string());
  auto link = links.Rewrite(page_dir, text);
  if (!link.ok()) return link.status();
  if (!link->has_value()) {
    return Status::InvalidArgument("links " + text +
                                   ", which is on the farm but not in the export");
  }
  s = json::string(**link);
  return Status::Ok();
}

Status RewriteJsonValue(json::value& v, std::string_view page_dir, const LinkRewriter& links,
                        int depth) {
  if (depth > 32) return Status::InvalidArgument("JSON nested deeper than 32 levels");
  if (v.is_string()) {
    v = json::string(links.RewriteText(std::string_view(v.get_string())));
  } else if (v.is_array()) {
    for (auto& item : v.get_array())
      FARM_RETURN_IF_ERROR(RewriteJsonValue(item, page_dir, links, depth + 1));
  } else if (v.is_object()) {
    for (auto& [key, item] : v.get_object()) {
      bool link_key = key == "url" || key == "provenance" || key == "index_url" || key == "index";
      if (link_key && item.is_string()) {
        FARM_RETURN_IF_ERROR(RewriteJsonLink(item, page_dir, links));
      } else if (key == "variants-json" && item.is_array()) {
        for (auto& entry : item.get_array()) {
          if (!entry.is_string()) continue;
          FARM_RETURN_IF_ERROR(RewriteJsonLink(entry, page_dir, links));
        }
      } else {
        FARM_RETURN_IF_ERROR(RewriteJsonValue(item, page_dir, links, depth + 1));
      }
    }
  }
  return Status::Ok();
}

}  // namespace

std::string OriginOf(std::string_view url) { return SplitOrigin(url).first; }

std::string ResolveUrl(std::string_view base, std::string_view ref) {
  if (SchemeLength(ref) > 0) {
    auto [origin, rest] = SplitOrigin(ref);
    if (origin.empty()) return std::string(ref);  // data:, mailto:: no hierarchy
    Parts p = SplitRef(rest);
    return origin + RemoveDotSegments(p.path) + std::string(p.query) + std::string(p.fragment);
  }
  auto [origin, base_rest] = SplitOrigin(base);
  Parts b = SplitRef(base_rest);
  Parts r = SplitRef(ref);
  if (ref.starts_with("//")) {
    std::string scheme = origin.substr(0, SchemeLength(origin));
    return ResolveUrl("", scheme + std::string(ref));
  }
  std::string path;
  std::string_view query = r.query;
  if (r.path.empty()) {
    path = std::string(b.path.empty() ? "/" : b.path);
    if (query.empty()) query = b.query;
  } else if (r.path.starts_with('/')) {
    path = RemoveDotSegments(r.path);
  } else {
    std::string_view dir = b.path.substr(0, b.path.rfind('/') + 1);
    path = RemoveDotSegments(std::string(dir.empty() ? "/" : dir) + std::string(r.path));
  }
  return origin + path + std::string(query) + std::string(r.fragment);
}

std::optional<std::string> SafeExportPath(std::string_view url_path) {
  if (!url_path.starts_with('/') || url_path.size() > kMaxPathBytes) return std::nullopt;
  std::string_view rest = url_path.substr(1);
  size_t segments = 0;
  size_t pos = 0;
  while (pos < rest.size()) {
    size_t slash = rest.find('/', pos);
    std::string_view seg = rest.substr(pos, slash == rest.npos ? rest.npos : slash - pos);
    if (seg.empty() || seg.front() == '.' || seg.size() > kMaxSegmentBytes ||
        ++segments > kMaxSegments || !std::all_of(seg.begin(), seg.end(), SafeByte)) {
      return std::nullopt;
    }
    if (slash == rest.npos) break;
    pos = slash + 1;
  }
  return std::string(rest);
}

std::string RelativeLink(std::string_view from_dir, std::string_view to) {
  // Drop the directories both share, then climb out of what is left of `from_dir`.
  size_t common = 0;
  for (size_t i = 0; i < from_dir.size() && i < to.size() && from_dir[i] == to[i]; ++i) {
    if (from_dir[i] == '/') common = i + 1;
  }
  size_t ups = static_cast<size_t>(
      std::count(from_dir.begin() + static_cast<long>(common), from_dir.end(), '/'));
  std::string out;
  for (size_t i = 0; i < ups; ++i) out += "../";
  out += to.substr(common);
  return out.empty() ? "./" : out;
}

std::string WheelShaOf(std::string_view path) {
  if (!path.starts_with("files/") || !path.ends_with(".whl")) return "";
  std::string_view rest = path.substr(6);
  size_t slash = rest.find('/');
  if (slash != 64 || rest.find('/', slash + 1) != rest.npos) return "";
  std::string_view sha = rest.substr(0, 64);
  return std::all_of(sha.begin(), sha.end(), IsHex) ? std::string(sha) : "";
}

LinkRewriter::LinkRewriter(std::string farm_base, std::string export_base)
    : farm_base_(std::move(farm_base)), export_base_(std::move(export_base)) {
  while (farm_base_.ends_with('/')) farm_base_.pop_back();
  while (export_base_.ends_with('/')) export_base_.pop_back();
}

Result<std::optional<std::string>> LinkRewriter::Rewrite(std::string_view page_dir,
                                                         std::string_view link) const {
  std::string_view trimmed = link;
  while (!trimmed.empty() && IsSpace(trimmed.front())) trimmed.remove_prefix(1);
  while (!trimmed.empty() && IsSpace(trimmed.back())) trimmed.remove_suffix(1);
  if (trimmed.empty() || trimmed.starts_with('#')) return std::optional<std::string>(link);
  std::string page_url = farm_base_ + "/" + std::string(page_dir);
  std::string target = ResolveUrl(page_url, trimmed);
  auto [origin, rest] = SplitOrigin(target);
  if (origin.empty() || origin != OriginOf(farm_base_)) {
    return std::optional<std::string>(link);  // not the farm's: kept as it is
  }
  Parts p = SplitRef(rest);
  if (!p.query.empty()) return std::optional<std::string>();
  auto path = SafeExportPath(p.path.empty() ? "/" : p.path);
  if (path && path->starts_with("files/") && !exported_.contains(*path)) {
    // A page that links a file its JSON does not list: the index changed while it was
    // read, or the page lies. Either way pip would fail on it.
    return Status::InvalidArgument("it links " + std::string(link) +
                                   ", a file the export does not hold");
  }
  if (!path || !exported_.contains(*path)) return std::optional<std::string>();
  std::string sha = WheelShaOf(*path);
  if (!sha.empty() && !p.fragment.empty() && p.fragment != "#sha256=" + sha) {
    return Status::InvalidArgument("the link " + std::string(link) + " says " +
                                   std::string(p.fragment.substr(1)) +
                                   " but its file is the one of sha256 " + sha);
  }
  std::string out =
      export_base_.empty() ? RelativeLink(page_dir, *path) : export_base_ + "/" + *path;
  return std::optional<std::string>(out + std::string(p.fragment));
}

std::string LinkRewriter::RewriteText(std::string_view text) const {
  const std::string& to = export_base_.empty() ? std::string(kBaseUrlPlaceholder) : export_base_;
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t hit = farm_base_.empty() ? text.npos : text.find(farm_base_, pos);
    if (hit == text.npos) break;
    out += text.substr(pos, hit - pos);
    out += to;
    pos = hit + farm_base_.size();
  }
  out += text.substr(pos);
  return out;
}

Result<std::string> RewriteHtml(std::string_view html, std::string_view page_dir,
                                const LinkRewriter& links) {
  std::string out;
  size_t pos = 0;
  while (pos < html.size()) {
    size_t lt = html.find('<', pos);
    out += links.RewriteText(html.substr(pos, lt == html.npos ? html.npos : lt - pos));
    if (lt == html.npos) break;
    if (html.substr(lt, 4) == "<!--") {
      size_t end = html.find("-->", lt + 4);
      if (end == html.npos) return Status::InvalidArgument("a comment never closes");
      out += html.substr(lt, end + 3 - lt);
      pos = end + 3;
      continue;
    }
    FARM_ASSIGN_OR_RETURN(pos, RewriteTag(html, lt, page_dir, links, out));
  }
  return out;
}

Result<std::string> RewriteJson(std::string_view text, std::string_view page_dir,
                                const LinkRewriter& links) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec) return Status::InvalidArgument("not JSON: " + ec.message());
  FARM_RETURN_IF_ERROR(RewriteJsonValue(v, page_dir, links, 0));
  return json::serialize(v);
}

}  // namespace farm::cli::exporter
