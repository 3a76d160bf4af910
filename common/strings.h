// Small string helpers every part of the farm uses, for ASCII protocol text (header names,
// media types, hex digits, index names, tokens): not for human text, which is UTF-8 and
// left as it is (utf8.h). Pure functions; safe from any thread.
#ifndef FARM_COMMON_STRINGS_H_
#define FARM_COMMON_STRINGS_H_

#include <string>
#include <string_view>

namespace farm {

// `s` with A-Z turned into a-z; every other byte kept.
std::string AsciiLower(std::string_view s);

// `s` without the ASCII white space (space, \t, \n, \v, \f, \r) at either end.
std::string TrimSpace(std::string_view s);

}  // namespace farm

#endif  // FARM_COMMON_STRINGS_H_
