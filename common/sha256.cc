#include "common/sha256.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <fstream>
#include <vector>

namespace farm {

struct Sha256::Impl {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(impl_->ctx, EVP_sha256(), nullptr);
}

Sha256::~Sha256() { EVP_MD_CTX_free(impl_->ctx); }

void Sha256::Update(std::string_view data) {
  EVP_DigestUpdate(impl_->ctx, data.data(), data.size());
}

std::string Sha256::Digest() {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(impl_->ctx, out, &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string Sha256::HexDigest() { return ToHex(Digest()); }

std::string ToHex(std::string_view bytes) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

std::string Sha256Hex(std::string_view data) {
  Sha256 h;
  h.Update(data);
  return h.HexDigest();
}

Result<std::string> Sha256FileHex(const std::string& path, int64_t* size) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open " + path);
  Sha256 h;
  std::vector<char> buf(1 << 20);
  int64_t total = 0;
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    std::streamsize n = in.gcount();
    if (n <= 0) break;
    h.Update(std::string_view(buf.data(), static_cast<size_t>(n)));
    total += n;
  }
  if (in.bad()) return Status::Internal("cannot read " + path);
  if (size) *size = total;
  return h.HexDigest();
}

std::string RandomHex(size_t bytes) {
  std::vector<unsigned char> buf(bytes);
  RAND_bytes(buf.data(), static_cast<int>(bytes));
  return ToHex(std::string_view(reinterpret_cast<char*>(buf.data()), bytes));
}

}  // namespace farm
