#include "common/provenance/json_read.h"

#include <cstdio>

namespace farm::provenance {

namespace json = boost::json;

Result<json::value> ParseJson(std::string_view text, const std::string& what) {
  json::parse_options options;
  options.max_depth = 32;
  boost::system::error_code ec;
  json::value v = json::parse(text, ec, {}, options);
  if (ec) return Status::InvalidArgument(what + ": malformed JSON (" + ec.message() + ")");
  return v;
}

Result<std::string> RequiredString(const json::object& o, std::string_view key,
                                   const std::string& what) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || !v->is_string()) {
    return Status::InvalidArgument(what + ": \"" + std::string(key) +
                                   "\" is missing or not a string");
  }
  return std::string(v->as_string());
}

std::string OptionalString(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : "";
}

namespace {

const json::value* ValueAt(const json::object& o, std::initializer_list<std::string_view> path) {
  const json::object* at = &o;
  const json::value* v = nullptr;
  for (std::string_view key : path) {
    if (at == nullptr) return nullptr;
    v = at->if_contains(key);
    if (v == nullptr) return nullptr;
    at = v->if_object();
  }
  return v;
}

}  // namespace

const json::object* ObjectAt(const json::object& o, std::initializer_list<std::string_view> path) {
  const json::value* v = ValueAt(o, path);
  return v != nullptr ? v->if_object() : nullptr;
}

std::string StringAt(const json::object& o, std::initializer_list<std::string_view> path) {
  const json::value* v = ValueAt(o, path);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : "";
}

std::string NumberAt(const json::object& o, std::initializer_list<std::string_view> path) {
  const json::value* v = ValueAt(o, path);
  if (v == nullptr) return "";
  if (v->is_int64()) return std::to_string(v->as_int64());
  if (v->is_uint64()) return std::to_string(v->as_uint64());
  if (v->is_double()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v->as_double());
    return buf;
  }
  return "";
}

bool BoolAt(const json::object& o, std::initializer_list<std::string_view> path) {
  const json::value* v = ValueAt(o, path);
  return v != nullptr && v->is_bool() && v->as_bool();
}

const json::array* ArrayAt(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr ? v->if_array() : nullptr;
}

}  // namespace farm::provenance
