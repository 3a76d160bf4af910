// An Atom 1.0 (RFC 4287) document writer for the farm's feeds. Every text and attribute
// is escaped and made a valid XML 1.0 character sequence (bad UTF-8 becomes U+FFFD, control
// characters XML forbids are dropped): feed text comes from builds (recipe names, file
// names, error messages) and may hold anything. Pure functions; thread-safe.
#ifndef FARM_DAEMON_COVERAGE_ATOM_H_
#define FARM_DAEMON_COVERAGE_ATOM_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/coverage/events.h"

namespace farm::coverage {

struct AtomEntry {
  std::string id;  // an IRI, stable across renderings
  std::string title;
  std::string link;  // the entry's page: absolute, or relative to the feed's URI
  std::string summary;
  std::string category;
  int64_t updated_ms = 0;
};

struct AtomFeed {
  std::string id;
  std::string title;
  std::string self_link;  // the feed's own URI
  std::string alternate_link;
  int64_t updated_ms = 0;          // the newest entry's; the feed's own when it has none
  std::vector<AtomEntry> entries;  // in the order given (callers sort newest first)
};

// `text` as XML character data or a quoted attribute value.
std::string XmlText(std::string_view text);

// The feed as an XML document (UTF-8, with its declaration).
std::string RenderAtom(const AtomFeed& feed);

// The feed entry of `event`: id "urn:farm:<event id>", the job page (or the build page)
// under `base_url` ("" gives links relative to the feed: "/#/job/3").
AtomEntry EntryOf(const Event& event, const std::string& base_url);

// Largest number of entries /feeds/wheels.atom lists.
inline constexpr size_t kMaxFeedEntries = 100;

}  // namespace farm::coverage

#endif  // FARM_DAEMON_COVERAGE_ATOM_H_
