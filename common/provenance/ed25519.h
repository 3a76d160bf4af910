// Ed25519 keys and signatures (RFC 8032) through OpenSSL's EVP interface. A key id is the
// lowercase hex SHA-256 of the 32-byte raw public key, so anyone holding the public key can
// recompute it (the Python verifier and `openssl` do).
//
//   auto key = Ed25519Key::Generate();
//   std::string sig = key->Sign(message);          // 64 bytes
//   bool ok = VerifyEd25519(key->public_raw(), message, sig);
#ifndef FARM_COMMON_PROVENANCE_ED25519_H_
#define FARM_COMMON_PROVENANCE_ED25519_H_

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

typedef struct evp_pkey_st EVP_PKEY;

namespace farm::provenance {

inline constexpr size_t kEd25519PublicKeyBytes = 32;
inline constexpr size_t kEd25519SignatureBytes = 64;

// The key id of a raw 32-byte public key: hex SHA-256 of those bytes.
std::string KeyIdOf(std::string_view public_raw);

// A private key. Immutable after construction; Sign() is safe from several threads.
class Ed25519Key {
 public:
  // A fresh key from OpenSSL's random generator.
  static Result<std::unique_ptr<Ed25519Key>> Generate();
  // Reads a PKCS#8 PEM private key; InvalidArgument when it is not an Ed25519 key.
  static Result<std::unique_ptr<Ed25519Key>> FromPrivatePem(const std::string& pem);
  ~Ed25519Key();
  Ed25519Key(const Ed25519Key&) = delete;
  Ed25519Key& operator=(const Ed25519Key&) = delete;

  // PKCS#8 PEM of the private key (unencrypted: the file holding it is mode 0600).
  Result<std::string> PrivatePem() const;
  // The 32-byte public key, its SubjectPublicKeyInfo PEM, and its key id.
  const std::string& public_raw() const { return public_raw_; }
  Result<std::string> PublicPem() const { return PublicPemOf(public_raw_); }
  const std::string& key_id() const { return key_id_; }

  // The 64-byte signature of `message`.
  Result<std::string> Sign(std::string_view message) const;

  // The SubjectPublicKeyInfo PEM ("-----BEGIN PUBLIC KEY-----") of a raw public key.
  static Result<std::string> PublicPemOf(std::string_view public_raw);

 private:
  explicit Ed25519Key(EVP_PKEY* key);
  EVP_PKEY* key_;
  std::string public_raw_;
  std::string key_id_;
};

// Whether `signature` is a valid Ed25519 signature of `message` under the raw public key.
// False (never an error) for a key or signature of the wrong length.
bool VerifyEd25519(std::string_view public_raw, std::string_view message,
                   std::string_view signature);

}  // namespace farm::provenance

#endif  // FARM_COMMON_PROVENANCE_ED25519_H_
