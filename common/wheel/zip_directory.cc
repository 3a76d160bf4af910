#include "common/wheel/zip_directory.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "common/wheel/elf/elf_reader.h"

namespace farm::wheel {
namespace {

constexpr uint32_t kEndSignature = 0x06054b50;
constexpr uint32_t kZip64EndSignature = 0x06064b50;
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr uint32_t kEntrySignature = 0x02014b50;
constexpr uint64_t kEndBytes = 22;
constexpr uint64_t kLocatorBytes = 20;
constexpr uint64_t kZip64EndBytes = 56;
constexpr uint64_t kEntryBytes = 46;
constexpr uint64_t kMaxComment = 0xffff;
constexpr uint16_t kZip64ExtraId = 0x0001;

class File {
 public:
  explicit File(int fd) : fd_(fd) {}
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  Result<std::string> Read(uint64_t offset, uint64_t size) const {
    std::string out(size, '\0');
    uint64_t done = 0;
    while (done < size) {
      ssize_t n = ::pread(fd_, out.data() + done, size - done, static_cast<off_t>(offset + done));
      if (n <= 0)
        return Status::DataLoss("zip file ends before offset " + std::to_string(offset + size));
      done += static_cast<uint64_t>(n);
    }
    return out;
  }

 private:
  int fd_;
};

// Where the central directory lies and how many entries it has.
struct DirectoryPlace {
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t entries = 0;
};

// The ZIP64 end record named by the locator just before the classic end record at `end`.
Result<DirectoryPlace> ReadZip64End(const File& file, uint64_t end, uint64_t file_size) {
  if (end < kLocatorBytes) return Status::DataLoss("zip64 end locator missing");
  FARM_ASSIGN_OR_RETURN(std::string loc, file.Read(end - kLocatorBytes, kLocatorBytes));
  if (LoadU32(loc, 0) != kZip64LocatorSignature)
    return Status::DataLoss("zip64 end locator missing");
  uint64_t at = LoadU64(loc, 8);
  if (!InBounds(at, kZip64EndBytes, file_size))
    return Status::DataLoss("zip64 end record out of bounds");
  FARM_ASSIGN_OR_RETURN(std::string rec, file.Read(at, kZip64EndBytes));
  if (LoadU32(rec, 0) != kZip64EndSignature) return Status::DataLoss("zip64 end record missing");
  return DirectoryPlace{LoadU64(rec, 48), LoadU64(rec, 40), LoadU64(rec, 32)};
}

Result<DirectoryPlace> FindDirectory(const File& file, uint64_t file_size) {
  if (file_size < kEndBytes) return Status::DataLoss("too short for a zip archive");
  uint64_t tail = std::min<uint64_t>(file_size, kEndBytes + kMaxComment);
  FARM_ASSIGN_OR_RETURN(std::string buf, file.Read(file_size - tail, tail));
  for (uint64_t p = tail - kEndBytes + 1; p-- > 0;) {
    if (LoadU32(buf, p) != kEndSignature) continue;
    if (p + kEndBytes + LoadU16(buf, p + 20) != tail) continue;  // the comment ends the file
    DirectoryPlace place{LoadU32(buf, p + 16), LoadU32(buf, p + 12), LoadU16(buf, p + 10)};
    if (place.entries == 0xffff || place.size == 0xffffffff || place.offset == 0xffffffff) {
      return ReadZip64End(file, file_size - tail + p, file_size);
    }
    return place;
  }
  return Status::DataLoss("no zip end-of-central-directory record");
}

// Replaces 0xffffffff sizes of an entry with those of its ZIP64 extra field.
Status ApplyZip64(std::string_view extra, ZipEntrySize* e, bool big_uncompressed,
                  bool big_compressed) {
  for (uint64_t p = 0; p + 4 <= extra.size();) {
    uint16_t id = LoadU16(extra, p);
    uint64_t len = LoadU16(extra, p + 2);
    if (!InBounds(p + 4, len, extra.size())) break;
    if (id == kZip64ExtraId) {
      uint64_t q = p + 4;
      for (auto [big, field] : {std::pair{big_uncompressed, &e->uncompressed},
                                std::pair{big_compressed, &e->compressed}}) {
        if (!big) continue;
        if (q + 8 > p + 4 + len) return Status::DataLoss(e->name + ": short zip64 extra field");
        *field = static_cast<int64_t>(std::min<uint64_t>(LoadU64(extra, q), INT64_MAX));
        q += 8;
      }
      return Status::Ok();
    }
    p += 4 + len;
  }
  return Status::DataLoss(e->name + ": sizes need a zip64 extra field it lacks");
}

Result<std::vector<ZipEntrySize>> ParseEntries(std::string_view d, uint64_t count) {
  std::vector<ZipEntrySize> out;
  uint64_t p = 0;
  for (uint64_t i = 0; i < count; ++i) {
    if (!InBounds(p, kEntryBytes, d.size()) || LoadU32(d, p) != kEntrySignature) {
      return Status::DataLoss("central directory entry " + std::to_string(i) + " is malformed");
    }
    uint64_t name_len = LoadU16(d, p + 28), extra_len = LoadU16(d, p + 30),
             comment_len = LoadU16(d, p + 32);
    if (!InBounds(p + kEntryBytes, name_len + extra_len + comment_len, d.size())) {
      return Status::DataLoss("central directory entry " + std::to_string(i) + " runs past it");
    }
    ZipEntrySize e{std::string(d.substr(p + kEntryBytes, name_len)), LoadU32(d, p + 20),
                   LoadU32(d, p + 24)};
    bool big_c = e.compressed == 0xffffffff, big_u = e.uncompressed == 0xffffffff;
    if (big_c || big_u) {
      FARM_RETURN_IF_ERROR(
          ApplyZip64(d.substr(p + kEntryBytes + name_len, extra_len), &e, big_u, big_c));
    }
    out.push_back(std::move(e));
    p += kEntryBytes + name_len + extra_len + comment_len;
  }
  return out;
}

}  // namespace

Result<ZipDirectory> ReadZipDirectory(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::NotFound("cannot open " + path);
  File file(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    return Status::NotFound(path + " is not a file");
  ZipDirectory out;
  out.file_bytes = st.st_size;
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  FARM_ASSIGN_OR_RETURN(DirectoryPlace place, FindDirectory(file, size));
  if (place.size > static_cast<uint64_t>(kMaxZipDirectoryBytes) ||
      place.entries > static_cast<uint64_t>(kMaxZipDirectoryEntries)) {
    return Status::ResourceExhausted("zip central directory of " + std::to_string(place.entries) +
                                     " entries in " + std::to_string(place.size) + " bytes");
  }
  if (!InBounds(place.offset, place.size, size)) {
    return Status::DataLoss("zip central directory lies outside the file");
  }
  FARM_ASSIGN_OR_RETURN(std::string dir, file.Read(place.offset, place.size));
  FARM_ASSIGN_OR_RETURN(out.entries, ParseEntries(dir, place.entries));
  return out;
}

}  // namespace farm::wheel
