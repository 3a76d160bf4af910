// The *.dist-info rules of InspectWheel, as free functions over what the zip scan found:
// RECORD against the streamed files, WHEEL against the file name, METADATA against the file
// name, and the file name's tags against the build environment. Each appends Problems and
// never fails. Stateless; safe from any thread.
#ifndef FARM_COMMON_WHEEL_METADATA_DIST_INFO_CHECKS_H_
#define FARM_COMMON_WHEEL_METADATA_DIST_INFO_CHECKS_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/wheel/problem.h"
#include "common/wheel/wheel_name.h"

namespace farm::wheel {

// Size and raw sha256 digest of one streamed file.
struct StreamedFile {
  int64_t size = 0;
  std::string sha256;
};

// Checks RECORD (text `record`, stored at `record_path`) against `files` (every regular
// file of the wheel by name): each row parses, is listed once, names a file that exists,
// with "sha256=" + urlsafe base64 digest (no padding) and the decimal size of the bytes
// streamed; RECORD's own row has empty hash and size; every file except RECORD.jws and
// RECORD.p7s is listed.
void CheckRecord(const std::string& record_path, std::string_view record,
                 const std::map<std::string, StreamedFile>& files, std::vector<Problem>* out);

// Checks WHEEL: Wheel-Version 1.x, Root-Is-Purelib false unless every platform tag is
// "any", Tag lines equal to the file name's expanded tags, Build equal to the build tag.
// Stores the sorted Tag lines in *tags.
void CheckWheelFile(const std::string& path, std::string_view text, const WheelFilename& name,
                    std::vector<std::string>* tags, std::vector<Problem>* out);

// Checks METADATA's Name (PEP 503 normalised) and Version (NormalizeVersion, local label
// included) against the file name. Stores the values found in *name and *version.
void CheckMetadataFile(const std::string& path, std::string_view text,
                       const WheelFilename& filename, std::string* name, std::string* version,
                       std::vector<Problem>* out);

// Checks the "{name}-{version}.dist-info" directory name against the file name.
void CheckDistInfoName(const std::string& dir, const WheelFilename& filename,
                       std::vector<Problem>* out);

// Checks the file name's tags against the build environment (see InspectOptions). A
// manylinux `platform` also needs a manylinux tag of that architecture promising no newer
// glibc (tag-manylinux-mismatch); whether the .so files keep that promise is
// CheckHostElves' part.
void CheckExpectedTags(const WheelFilename& name, const std::string& python_tag,
                       const std::string& platform, std::vector<Problem>* out);

}  // namespace farm::wheel

#endif  // FARM_COMMON_WHEEL_METADATA_DIST_INFO_CHECKS_H_
