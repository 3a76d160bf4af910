// UTF-8 validity for text that crosses a boundary demanding it: protobuf `string` fields
// (a proto3 parser refuses a whole message over one bad byte) and JSON and HTML answers.
// Build output, file names and request paths are bytes, not text; these helpers make them
// text without losing what can be read. Pure functions; safe from any thread.
#ifndef FARM_COMMON_UTF8_H_
#define FARM_COMMON_UTF8_H_

#include <string>
#include <string_view>

namespace farm {

// True when `s` is well-formed UTF-8: no stray continuation bytes, no truncated or
// overlong sequences, no surrogates (U+D800..U+DFFF), nothing past U+10FFFF.
bool IsValidUtf8(std::string_view s);

// `s` with every byte that is not part of a well-formed sequence replaced by U+FFFD (one
// replacement per bad byte, so the length of the damage stays visible); `s` itself when
// it is already valid.
std::string ToValidUtf8(std::string_view s);

// `s` with & < > " ' as character references: safe as HTML or XML text and inside a
// quoted attribute. Without `quotes`, only & < > (for formats where a reference to a quote
// would show as written, such as Slack's text).
std::string EscapeMarkup(std::string_view s, bool quotes = true);

}  // namespace farm

#endif  // FARM_COMMON_UTF8_H_
