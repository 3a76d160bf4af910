// Reading JSON from outside the farm (envelopes, statements, key sets) with Boost.JSON:
// bounded nesting, and members looked up without throwing. Internal to farm_provenance.
#ifndef FARM_COMMON_PROVENANCE_JSON_READ_H_
#define FARM_COMMON_PROVENANCE_JSON_READ_H_

#include <boost/json.hpp>
#include <initializer_list>
#include <string>
#include <string_view>

#include "common/status.h"

namespace farm::provenance {

// Parses `text`; InvalidArgument naming `what` for malformed JSON or nesting past 32.
Result<boost::json::value> ParseJson(std::string_view text, const std::string& what);

// The string member `key`; InvalidArgument "<what>: "key" is missing or not a string".
Result<std::string> RequiredString(const boost::json::object& o, std::string_view key,
                                   const std::string& what);

// The string member `key`, "" when absent or not a string.
std::string OptionalString(const boost::json::object& o, std::string_view key);

// The object at a path of member names, nullptr when any step is absent or not an object.
const boost::json::object* ObjectAt(const boost::json::object& o,
                                    std::initializer_list<std::string_view> path);

// The string at a path of member names ("" when absent), and the same for a number
// (as written, integers without a fraction) and a bool (false when absent).
std::string StringAt(const boost::json::object& o, std::initializer_list<std::string_view> path);
std::string NumberAt(const boost::json::object& o, std::initializer_list<std::string_view> path);
bool BoolAt(const boost::json::object& o, std::initializer_list<std::string_view> path);

// The array member `key`, nullptr when absent or not an array.
const boost::json::array* ArrayAt(const boost::json::object& o, std::string_view key);

}  // namespace farm::provenance

#endif  // FARM_COMMON_PROVENANCE_JSON_READ_H_
