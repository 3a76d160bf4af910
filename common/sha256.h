// SHA-256 digests (OpenSSL) and random tokens, as lowercase hex.
#ifndef FARM_COMMON_SHA256_H_
#define FARM_COMMON_SHA256_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace farm {

// Incremental hasher: Update() any number of times, then HexDigest() once.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(std::string_view data);
  // Returns the 32-byte digest; the hasher must not be used afterwards.
  std::string Digest();
  std::string HexDigest();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::string Sha256Hex(std::string_view data);

// Hashes a file in 1 MiB blocks; sets *size to its length when given.
Result<std::string> Sha256FileHex(const std::string& path, int64_t* size = nullptr);

// Returns `bytes` cryptographically random bytes as hex (2*bytes characters).
std::string RandomHex(size_t bytes);

std::string ToHex(std::string_view bytes);

}  // namespace farm

#endif  // FARM_COMMON_SHA256_H_
