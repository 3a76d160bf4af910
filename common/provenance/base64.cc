#include "common/provenance/base64.h"

#include <array>
#include <cstdint>

namespace farm::provenance {
namespace {

constexpr char kStandard[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// The 6-bit value of `c`, -1 outside both alphabets; *alphabet says which alphabet it
// belongs to (0 both, 1 standard only, 2 URL-safe only).
int Value(char c, int* alphabet) {
  *alphabet = 0;
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '/') {
    *alphabet = 1;
    return c == '+' ? 62 : 63;
  }
  if (c == '-' || c == '_') {
    *alphabet = 2;
    return c == '-' ? 62 : 63;
  }
  return -1;
}

}  // namespace

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t n = (uint32_t{static_cast<unsigned char>(bytes[i])} << 16) |
                 (uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8) |
                 static_cast<unsigned char>(bytes[i + 2]);
    for (int shift : {18, 12, 6, 0}) out.push_back(kStandard[(n >> shift) & 63]);
  }
  size_t left = bytes.size() - i;
  if (left > 0) {
    uint32_t n = uint32_t{static_cast<unsigned char>(bytes[i])} << 16;
    if (left == 2) n |= uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8;
    out.push_back(kStandard[(n >> 18) & 63]);
    out.push_back(kStandard[(n >> 12) & 63]);
    out.push_back(left == 2 ? kStandard[(n >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

Result<std::string> Base64Decode(std::string_view text) {
  size_t padding = 0;
  while (padding < 2 && padding < text.size() && text[text.size() - 1 - padding] == '=') {
    ++padding;
  }
  std::string_view body = text.substr(0, text.size() - padding);
  if (padding > 0 && text.size() % 4 != 0) {
    return Status::InvalidArgument("base64: padding on a text whose length is not a multiple of 4");
  }
  if (body.size() % 4 == 1) return Status::InvalidArgument("base64: impossible length");
  std::string out;
  out.reserve(body.size() / 4 * 3 + 2);
  uint32_t acc = 0;
  int bits = 0;
  int seen_alphabet = 0;
  for (char c : body) {
    int alphabet = 0;
    int v = Value(c, &alphabet);
    if (v < 0) return Status::InvalidArgument("base64: unexpected character");
    if (alphabet != 0) {
      if (seen_alphabet != 0 && seen_alphabet != alphabet) {
        return Status::InvalidArgument("base64: standard and URL-safe alphabets mixed");
      }
      seen_alphabet = alphabet;
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  if (bits > 0 && (acc & ((1u << bits) - 1)) != 0) {
    return Status::InvalidArgument("base64: non-zero bits after the last byte");
  }
  if (padding > 0 && (body.size() % 4) + padding != 4) {
    return Status::InvalidArgument("base64: wrong amount of padding");
  }
  return out;
}

}  // namespace farm::provenance
