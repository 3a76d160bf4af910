#include "daemon/coverage/atom.h"

#include "common/clock.h"
#include "common/utf8.h"

namespace farm::coverage {

namespace {

// Drops the code points XML 1.0 does not allow (section 2.2): C0 controls but tab, line
// feed and carriage return, and U+FFFE and U+FFFF. `s` is valid UTF-8.
std::string XmlChars(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') continue;
    // U+FFFE and U+FFFF are EF BF BE and EF BF BF.
    if (c == 0xEF && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0xBF &&
        (static_cast<unsigned char>(s[i + 2]) & 0xFE) == 0xBE) {
      i += 2;
      continue;
    }
    out.push_back(s[i]);
  }
  return out;
}

void Element(std::string* out, const char* indent, const char* name, std::string_view text) {
  *out += indent;
  *out += "<";
  *out += name;
  *out += ">" + XmlText(text) + "</";
  *out += name;
  *out += ">\n";
}

void Link(std::string* out, const char* indent, const char* rel, std::string_view href,
          const char* type) {
  if (href.empty()) return;
  *out += std::string(indent) + "<link rel=\"" + rel + "\" href=\"" + XmlText(href) + "\"";
  if (type != nullptr) *out += std::string(" type=\"") + type + "\"";
  *out += "/>\n";
}

}  // namespace

std::string XmlText(std::string_view text) { return EscapeMarkup(XmlChars(ToValidUtf8(text))); }

std::string RenderAtom(const AtomFeed& feed) {
  std::string out = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n";
  out += "<feed xmlns=\"http://www.w3.org/2005/Atom\">\n";
  Element(&out, "  ", "id", feed.id);
  Element(&out, "  ", "title", feed.title);
  int64_t updated = feed.entries.empty() ? feed.updated_ms : feed.entries.front().updated_ms;
  Element(&out, "  ", "updated", FormatRfc3339(updated > 0 ? updated : 1));
  out += "  <author><name>" + XmlText(feed.title) + "</name></author>\n";
  Link(&out, "  ", "self", feed.self_link, "application/atom+xml");
  Link(&out, "  ", "alternate", feed.alternate_link, "text/html");
  for (const AtomEntry& e : feed.entries) {
    out += "  <entry>\n";
    Element(&out, "    ", "id", e.id);
    Element(&out, "    ", "title", e.title);
    Element(&out, "    ", "updated", FormatRfc3339(e.updated_ms > 0 ? e.updated_ms : 1));
    Link(&out, "    ", "alternate", e.link, "text/html");
    if (!e.category.empty()) out += "    <category term=\"" + XmlText(e.category) + "\"/>\n";
    if (!e.summary.empty()) Element(&out, "    ", "summary", e.summary);
    out += "  </entry>\n";
  }
  out += "</feed>\n";
  return out;
}

AtomEntry EntryOf(const Event& event, const std::string& base_url) {
  std::string base = base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  std::string page = event.job_id > 0 ? "/#/job/" + std::to_string(event.job_id)
                                      : "/#/build/" + std::to_string(event.build_id);
  std::string summary;
  if (event.kind != EventKind::kBuildFailed) {
    summary = event.wheel + " (sha256 " + event.sha256 + ")" +
              (event.cell.empty() ? "" : ", cell " + event.cell) + ", build " +
              std::to_string(event.build_id);
  } else if (event.kind == EventKind::kPublicationRefused) {
    summary = event.cause;
  } else {
    summary = "build " + std::to_string(event.build_id) +
              (event.cell.empty() ? "" : ", cell " + event.cell) +
              (event.cause.empty() ? "" : ": " + event.cause);
  }
  return AtomEntry{.id = "urn:farm:" + event.id,
                   .title = EventTitle(event),
                   .link = base + page,
                   .summary = std::move(summary),
                   .category = std::string(EventKindName(event.kind)),
                   .updated_ms = event.time_ms};
}

}  // namespace farm::coverage
