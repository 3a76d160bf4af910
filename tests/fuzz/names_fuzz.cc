// Fuzzes the name rules the package index and the wheel checks depend on: PEP 503 project
// name normalisation, PEP 440 version normalisation as used in file names, the PEP 427
// wheel file name parser, the arch-list parser and UTF-8 repair. Properties: normalisation
// is idempotent and, for a name of ASCII letters, digits, '-', '_' and '.', yields only
// [a-z0-9-] without doubled, leading or trailing '-'; a parsed wheel file name has a name
// and a version; UTF-8 repair yields valid text, is idempotent and keeps valid text as is;
// a parsed arch list formats to a list that parses to itself.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/arch.h"
#include "common/utf8.h"
#include "common/wheel/wheel_name.h"
#include "tests/fuzz/fuzz_util.h"

namespace farm::fuzz {
namespace {

bool IsPep508Name(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return false;
    }
  }
  return std::isalnum(static_cast<unsigned char>(s.front())) &&
         std::isalnum(static_cast<unsigned char>(s.back()));
}

int FuzzOne(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);

  std::string name = wheel::NormalizeProjectName(text);
  fuzz::Require(wheel::NormalizeProjectName(name) == name, "normalisation is idempotent", text);
  if (IsPep508Name(text)) {
    for (char c : name) {
      fuzz::Require((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-',
                    "a normalised name is [a-z0-9-]", text + " -> " + name);
    }
    fuzz::Require(name.find("--") == std::string::npos && name.front() != '-' && name.back() != '-',
                  "a normalised name has no doubled or edge '-'", text + " -> " + name);
  }
  std::string version = wheel::NormalizeVersion(text);
  fuzz::Require(wheel::NormalizeVersion(version) == version, "version normalisation is idempotent",
                text + " -> " + version);

  auto parsed = wheel::ParseWheelFilename(text);
  if (parsed.ok()) {
    fuzz::Require(!parsed->name.empty() && !parsed->version.empty(),
                  "a parsed wheel name has a name and a version", text);
  }

  std::string valid = ToValidUtf8(text);
  fuzz::Require(IsValidUtf8(valid) && ToValidUtf8(valid) == valid,
                "ToValidUtf8 yields valid text and is idempotent", text);
  fuzz::Require((valid == text) == IsValidUtf8(text), "valid text is kept as is", text);

  auto targets = arch::ParseArchList(text);
  if (targets.ok()) {
    std::string formatted = arch::FormatArchList(*targets);
    auto again = arch::ParseArchList(formatted);
    fuzz::Require(again.ok() && arch::FormatArchList(*again) == formatted,
                  "a formatted arch list parses to itself", text + " -> " + formatted);
  }
  return 0;
}

}  // namespace
}  // namespace farm::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return farm::fuzz::FuzzOne(data, size);
}
