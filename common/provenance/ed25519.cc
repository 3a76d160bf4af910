#include "common/provenance/ed25519.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <functional>

#include "common/sha256.h"

namespace farm::provenance {
namespace {

struct MdCtxFree {
  void operator()(EVP_MD_CTX* p) const { EVP_MD_CTX_free(p); }
};
struct KeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct BioFree {
  void operator()(BIO* p) const { BIO_free_all(p); }
};
using MdCtxPtr = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;
using BioPtr = std::unique_ptr<BIO, BioFree>;

// OpenSSL's first queued error as a Status, leaving its queue empty for other callers.
Status OpenSslError(const std::string& what) {
  unsigned long e = ERR_get_error();
  char buf[256] = {0};
  if (e != 0) ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return Status::Internal(what + (e != 0 ? std::string(": ") + buf : ""));
}

Result<std::string> WritePem(const std::function<int(BIO*)>& write) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || write(bio.get()) != 1) return OpenSslError("writing PEM");
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

Result<std::string> RawPublic(EVP_PKEY* key) {
  std::string raw(kEd25519PublicKeyBytes, '\0');
  size_t len = raw.size();
  if (EVP_PKEY_get_raw_public_key(key, reinterpret_cast<unsigned char*>(raw.data()), &len) != 1 ||
      len != kEd25519PublicKeyBytes) {
    return OpenSslError("reading an Ed25519 public key");
  }
  return raw;
}

}  // namespace

std::string KeyIdOf(std::string_view public_raw) { return Sha256Hex(public_raw); }

Ed25519Key::Ed25519Key(EVP_PKEY* key) : key_(key) {}

Ed25519Key::~Ed25519Key() { EVP_PKEY_free(key_); }

Result<std::unique_ptr<Ed25519Key>> Ed25519Key::Generate() {
  EVP_PKEY* raw = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  if (raw == nullptr) return OpenSslError("generating an Ed25519 key");
  std::unique_ptr<Ed25519Key> key(new Ed25519Key(raw));
  FARM_ASSIGN_OR_RETURN(key->public_raw_, RawPublic(raw));
  key->key_id_ = KeyIdOf(key->public_raw_);
  return key;
}

Result<std::unique_ptr<Ed25519Key>> Ed25519Key::FromPrivatePem(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return OpenSslError("reading a private key");
  KeyPtr parsed(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!parsed) {
    ERR_clear_error();
    return Status::InvalidArgument("not a PEM private key");
  }
  if (EVP_PKEY_get_id(parsed.get()) != EVP_PKEY_ED25519) {
    return Status::InvalidArgument("the private key is not an Ed25519 key");
  }
  std::unique_ptr<Ed25519Key> key(new Ed25519Key(parsed.release()));
  FARM_ASSIGN_OR_RETURN(key->public_raw_, RawPublic(key->key_));
  key->key_id_ = KeyIdOf(key->public_raw_);
  return key;
}

Result<std::string> Ed25519Key::PrivatePem() const {
  return WritePem([this](BIO* b) {
    return PEM_write_bio_PrivateKey(b, key_, nullptr, nullptr, 0, nullptr, nullptr);
  });
}

Result<std::string> Ed25519Key::PublicPemOf(std::string_view public_raw) {
  if (public_raw.size() != kEd25519PublicKeyBytes) {
    return Status::InvalidArgument("an Ed25519 public key has 32 bytes, not " +
                                   std::to_string(public_raw.size()));
  }
  KeyPtr key(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr,
                                         reinterpret_cast<const unsigned char*>(public_raw.data()),
                                         public_raw.size()));
  if (!key) return OpenSslError("loading an Ed25519 public key");
  return WritePem([&key](BIO* b) { return PEM_write_bio_PUBKEY(b, key.get()); });
}

Result<std::string> Ed25519Key::Sign(std::string_view message) const {
  MdCtxPtr ctx(EVP_MD_CTX_new());
  std::string sig(kEd25519SignatureBytes, '\0');
  size_t len = sig.size();
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key_) != 1 ||
      EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len,
                     reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1 ||
      len != kEd25519SignatureBytes) {
    return OpenSslError("signing with Ed25519 key " + key_id_);
  }
  return sig;
}

bool VerifyEd25519(std::string_view public_raw, std::string_view message,
                   std::string_view signature) {
  if (public_raw.size() != kEd25519PublicKeyBytes || signature.size() != kEd25519SignatureBytes) {
    return false;
  }
  KeyPtr key(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr,
                                         reinterpret_cast<const unsigned char*>(public_raw.data()),
                                         public_raw.size()));
  MdCtxPtr ctx(EVP_MD_CTX_new());
  bool ok =
      key && ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) == 1 &&
      EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                       signature.size(), reinterpret_cast<const unsigned char*>(message.data()),
                       message.size()) == 1;
  ERR_clear_error();
  return ok;
}

}  // namespace farm::provenance
