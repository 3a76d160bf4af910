// Test helpers that write zip archives and wheels with libarchive's writer, so every wheel
// the tests inspect is built at test time: a valid wheel by default, with hooks to break
// exactly one rule. Not thread-safe; each call writes its own file.
#ifndef FARM_TESTS_UNIT_COMMON_WHEEL_WHEEL_BUILDER_H_
#define FARM_TESTS_UNIT_COMMON_WHEEL_WHEEL_BUILDER_H_

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/wheel/inspect.h"

namespace farm::wheel::testing {

// One entry of a zip archive as written, hostile names and all.
struct ZipEntrySpec {
  enum class Type { kFile, kDirectory, kSymlink };
  std::string name;
  std::string content;  // file bytes
  Type type = Type::kFile;
  std::string link_target;  // for kSymlink
};

// Writes `entries` in order to a zip archive at `path`, files deflated.
Status WriteZip(const std::string& path, const std::vector<ZipEntrySpec>& entries);

// A wheel made of text fields a test may edit before writing.
struct WheelSpec {
  std::string filename = "attn_example-1.0.0+cu130-cp312-cp312-linux_x86_64.whl";
  std::string dist_info = "attn_example-1.0.0+cu130.dist-info";
  std::string metadata =
      "Metadata-Version: 2.1\nName: attn-example\nVersion: 1.0.0+cu130\n\nAn example.\n";
  std::string wheel =
      "Wheel-Version: 1.0\nGenerator: farm-test 1.0\nRoot-Is-Purelib: false\n"
      "Tag: cp312-cp312-linux_x86_64\n";
  // Package files, listed in RECORD.
  std::vector<ZipEntrySpec> files = {
      {"attn_example/__init__.py", "from ._version import v\n"},
      {"attn_example/_version.py", "v = '1.0.0'\n"},
  };
  // Edits the generated RECORD text (rows joined by '\n') before it is written.
  std::function<void(std::string* record)> edit_record;
  // Entries written after RECORD and not listed in it.
  std::vector<ZipEntrySpec> unlisted;
};

// "sha256=<urlsafe base64 without padding>" of `content`.
std::string RecordHash(const std::string& content);

// The RECORD row of `path` with `content`.
std::string RecordRow(const std::string& path, const std::string& content);

// Writes the wheel described by `spec` into `dir`; on success returns its path.
Result<std::string> WriteWheel(const std::string& dir, const WheelSpec& spec);

// Every problem of `r`, one per line, for a failure message.
std::string AllProblems(const WheelReport& r);

}  // namespace farm::wheel::testing

#endif  // FARM_TESTS_UNIT_COMMON_WHEEL_WHEEL_BUILDER_H_
