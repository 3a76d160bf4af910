// Parsers for the text files of a wheel's *.dist-info directory: RECORD (CSV rows of
// path, hash, size) and the email-header style METADATA and WHEEL files. Pure functions;
// safe from any thread.
#ifndef FARM_COMMON_WHEEL_METADATA_DIST_INFO_H_
#define FARM_COMMON_WHEEL_METADATA_DIST_INFO_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace farm::wheel {

// One RECORD row. `hash` is "sha256=<urlsafe base64, no padding>" or "" (RECORD's own row).
struct RecordRow {
  std::string path;
  std::string hash;
  std::string size;
  int line = 0;  // 1-based line where the row starts
};

// Parses RECORD as RFC 4180 CSV: ',' separated, fields optionally in double quotes with
// "" for a literal quote (a quoted field may contain commas and newlines), lines ending in
// "\n" or "\r\n", blank lines skipped. On success returns the rows; InvalidArgument naming
// the line otherwise (unterminated quote, text after a closing quote, a row without
// exactly three fields).
Result<std::vector<RecordRow>> ParseRecord(std::string_view text);

// One "Name: value" header of METADATA or WHEEL.
struct HeaderField {
  std::string name;
  std::string value;
};

// Parses the header block of an email-style file: stops at the first empty line (the
// METADATA body follows it), joins continuation lines (starting with a space or tab) to
// the previous value, trims surrounding whitespace. Lines without ':' are ignored.
std::vector<HeaderField> ParseHeaders(std::string_view text);

// The first value of header `name` (case-insensitive), or nullopt.
std::optional<std::string> FindHeader(const std::vector<HeaderField>& fields,
                                      std::string_view name);
// Every value of header `name` (case-insensitive) in file order.
std::vector<std::string> FindHeaders(const std::vector<HeaderField>& fields, std::string_view name);

// URL-safe base64 ('-' and '_') without '=' padding, as RECORD writes digests.
std::string Base64UrlNoPad(std::string_view bytes);

}  // namespace farm::wheel

#endif  // FARM_COMMON_WHEEL_METADATA_DIST_INFO_H_
