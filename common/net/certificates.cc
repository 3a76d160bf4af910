#include "common/net/certificates.h"

#include <arpa/inet.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <functional>
#include <memory>

#include "common/fs.h"

namespace farm::net {
namespace {

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using CertPtr = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;

Status OpenSslError(const std::string& what) {
  unsigned long e = ERR_get_error();
  char buf[256] = {0};
  if (e != 0) ERR_error_string_n(e, buf, sizeof buf);
  return Status::Internal(what + (e != 0 ? std::string(": ") + buf : ""));
}

Result<KeyPtr> NewKey() {
  KeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return OpenSslError("generating a P-256 key");
  return key;
}

Result<std::string> ToPem(const std::function<int(BIO*)>& write) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || write(bio.get()) != 1) return OpenSslError("writing PEM");
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

Result<std::string> KeyPem(EVP_PKEY* key) {
  return ToPem([key](BIO* b) {
    return PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr, nullptr);
  });
}

Result<std::string> CertPem(X509* cert) {
  return ToPem([cert](BIO* b) { return PEM_write_bio_X509(b, cert); });
}

// A certificate for `key` named `name`, valid from now for `days`, with a random serial;
// issuer and signature are set by the caller.
Result<CertPtr> NewCertificate(EVP_PKEY* key, const std::string& name, int days) {
  CertPtr cert(X509_new());
  if (!cert) return OpenSslError("allocating a certificate");
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof serial) != 1) return OpenSslError("random serial");
  serial[0] &= 0x7f;  // positive
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -300);  // small clock skews
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(days) * 24 * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* subject = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(subject, "O", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>("GPU wheel farm"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(name.c_str()), -1, -1, 0);
  return cert;
}

Status AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) return OpenSslError("certificate extension " + value);
  int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  return ok == 1 ? Status::Ok() : OpenSslError("adding extension " + value);
}

Result<std::string> SubjectAltNames(const std::vector<std::string>& hosts) {
  std::string out;
  for (const std::string& h : hosts) {
    if (h.empty() || h.find_first_of(",\n\r") != std::string::npos) {
      return Status::InvalidArgument("bad host name \"" + h + "\"");
    }
    unsigned char buf[sizeof(in6_addr)];
    bool ip = inet_pton(AF_INET, h.c_str(), buf) == 1 || inet_pton(AF_INET6, h.c_str(), buf) == 1;
    out += (out.empty() ? "" : ",") + std::string(ip ? "IP:" : "DNS:") + h;
  }
  return out;
}

Result<KeyPtr> ReadKey(const std::string& path) {
  FARM_ASSIGN_OR_RETURN(std::string pem, fs::ReadFile(path));
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  KeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!key) return OpenSslError("reading the CA key " + path);
  return key;
}

Result<CertPtr> ReadCert(const std::string& path) {
  FARM_ASSIGN_OR_RETURN(std::string pem, fs::ReadFile(path));
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  CertPtr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!cert) return OpenSslError("reading the CA certificate " + path);
  return cert;
}

bool PlainFileName(const std::string& name) {
  return !name.empty() && name.size() <= 200 && name[0] != '.' &&
         name.find_first_of("/\\\n\r") == std::string::npos;
}

}  // namespace

Status CreateCa(const std::string& dir, const std::string& name, int days) {
  if (days < 1) return Status::InvalidArgument("a CA must be valid for at least one day");
  if (fs::Exists(dir + "/ca.key")) {
    return Status::AlreadyExists(dir + " holds a CA already (ca.key); nothing changed");
  }
  FARM_RETURN_IF_ERROR(fs::MakeDirs(dir, 0700));
  FARM_ASSIGN_OR_RETURN(KeyPtr key, NewKey());
  FARM_ASSIGN_OR_RETURN(CertPtr cert, NewCertificate(key.get(), name, days));
  X509_set_issuer_name(cert.get(), X509_get_subject_name(cert.get()));
  FARM_RETURN_IF_ERROR(
      AddExtension(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0"));
  FARM_RETURN_IF_ERROR(
      AddExtension(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign"));
  FARM_RETURN_IF_ERROR(AddExtension(cert.get(), cert.get(), NID_subject_key_identifier, "hash"));
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) return OpenSslError("signing the CA");
  FARM_ASSIGN_OR_RETURN(std::string key_pem, KeyPem(key.get()));
  FARM_ASSIGN_OR_RETURN(std::string cert_pem, CertPem(cert.get()));
  FARM_RETURN_IF_ERROR(fs::WriteFileAtomic(dir + "/ca.key", key_pem, 0600));
  return fs::WriteFileAtomic(dir + "/ca.pem", cert_pem, 0644);
}

Status IssueCertificate(const std::string& ca_dir, const CertRequest& r,
                        const std::string& out_dir) {
  if (!PlainFileName(r.name)) {
    return Status::InvalidArgument("certificate name \"" + r.name + "\" must be a plain file name");
  }
  if (!r.server && !r.client) return Status::InvalidArgument("give --server, --client or both");
  if (r.server && r.hosts.empty()) {
    return Status::InvalidArgument(
        "a server certificate needs --host for each name or address "
        "clients reach farmd by");
  }
  if (r.days < 1) return Status::InvalidArgument("--days must be at least 1");
  if (!fs::Exists(ca_dir + "/ca.key")) {
    return Status::NotFound("no CA in " + ca_dir + ": run farmctl ca init " + ca_dir + " first");
  }
  FARM_ASSIGN_OR_RETURN(KeyPtr ca_key, ReadKey(ca_dir + "/ca.key"));
  FARM_ASSIGN_OR_RETURN(CertPtr ca, ReadCert(ca_dir + "/ca.pem"));
  FARM_ASSIGN_OR_RETURN(KeyPtr key, NewKey());
  FARM_ASSIGN_OR_RETURN(CertPtr cert, NewCertificate(key.get(), r.name, r.days));
  X509_set_issuer_name(cert.get(), X509_get_subject_name(ca.get()));
  X509* c = cert.get();
  FARM_RETURN_IF_ERROR(AddExtension(c, ca.get(), NID_basic_constraints, "critical,CA:FALSE"));
  FARM_RETURN_IF_ERROR(AddExtension(c, ca.get(), NID_key_usage, "critical,digitalSignature"));
  std::string uses = std::string(r.server ? "serverAuth" : "") + (r.server && r.client ? "," : "") +
                     (r.client ? "clientAuth" : "");
  FARM_RETURN_IF_ERROR(AddExtension(c, ca.get(), NID_ext_key_usage, uses));
  FARM_RETURN_IF_ERROR(AddExtension(c, ca.get(), NID_authority_key_identifier, "keyid"));
  if (!r.hosts.empty()) {
    FARM_ASSIGN_OR_RETURN(std::string sans, SubjectAltNames(r.hosts));
    FARM_RETURN_IF_ERROR(AddExtension(c, ca.get(), NID_subject_alt_name, sans));
  }
  if (X509_sign(c, ca_key.get(), EVP_sha256()) == 0) return OpenSslError("signing " + r.name);
  FARM_ASSIGN_OR_RETURN(std::string key_pem, KeyPem(key.get()));
  FARM_ASSIGN_OR_RETURN(std::string cert_pem, CertPem(c));
  FARM_RETURN_IF_ERROR(fs::MakeDirs(out_dir));
  FARM_RETURN_IF_ERROR(fs::WriteFileAtomic(out_dir + "/" + r.name + ".key", key_pem, 0600));
  return fs::WriteFileAtomic(out_dir + "/" + r.name + ".pem", cert_pem, 0644);
}

}  // namespace farm::net
