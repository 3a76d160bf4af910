// The farm's CA: certificates chain to it, carry the uses and names asked for, keys are
// private, and bad requests change nothing.
#include "common/net/certificates.h"

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include "common/fs.h"
#include "tests/support/test_util.h"

namespace farm::net {
namespace {

X509* ReadCert(const std::string& path) {
  auto pem = fs::ReadFile(path);
  if (!pem.ok()) return nullptr;
  BIO* bio = BIO_new_mem_buf(pem->data(), static_cast<int>(pem->size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return cert;
}

// X509_V_OK when `leaf` chains to `ca` for `purpose` (X509_PURPOSE_SSL_SERVER or _CLIENT).
int Verify(X509* ca, X509* leaf, int purpose) {
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf, nullptr);
  X509_STORE_CTX_set_purpose(ctx, purpose);
  int result = X509_verify_cert(ctx) == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  return result;
}

int Mode(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 0777) : -1;
}

class CertificatesTest : public ::testing::Test {
 protected:
  std::string Ca() { return dir_.path() + "/ca"; }
  farm::testing::ScopedTempDir dir_;
};

TEST_F(CertificatesTest, ServerAndClientCertificatesChainToTheCa) {
  ASSERT_OK(CreateCa(Ca(), "test farm CA", 30));
  EXPECT_EQ(Mode(Ca() + "/ca.key"), 0600);
  CertRequest server{"farmd", {"farm.example.lan", "10.1.2.3", "::1"}, true, false, 10};
  ASSERT_OK(IssueCertificate(Ca(), server, dir_.path() + "/out"));
  CertRequest client{"worker-ü", {}, false, true, 10};
  ASSERT_OK(IssueCertificate(Ca(), client, dir_.path() + "/out"));
  EXPECT_EQ(Mode(dir_.path() + "/out/farmd.key"), 0600);

  X509* ca = ReadCert(Ca() + "/ca.pem");
  X509* farmd = ReadCert(dir_.path() + "/out/farmd.pem");
  X509* worker = ReadCert(dir_.path() + "/out/worker-ü.pem");
  ASSERT_TRUE(ca && farmd && worker);
  EXPECT_EQ(Verify(ca, farmd, X509_PURPOSE_SSL_SERVER), X509_V_OK);
  EXPECT_EQ(Verify(ca, worker, X509_PURPOSE_SSL_CLIENT), X509_V_OK);
  EXPECT_NE(Verify(ca, worker, X509_PURPOSE_SSL_SERVER), X509_V_OK);  // a client only
  EXPECT_EQ(X509_check_host(farmd, "farm.example.lan", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_ip_asc(farmd, "10.1.2.3", 0), 1);
  EXPECT_NE(X509_check_host(farmd, "other.example.lan", 0, 0, nullptr), 1);
  X509_free(ca);
  X509_free(farmd);
  X509_free(worker);
}

TEST_F(CertificatesTest, ACertificateOfAnotherCaDoesNotChain) {
  ASSERT_OK(CreateCa(Ca(), "one", 30));
  ASSERT_OK(CreateCa(dir_.path() + "/other", "another", 30));
  ASSERT_OK(
      IssueCertificate(dir_.path() + "/other", {"farmd", {"h"}, true, false, 10}, dir_.path()));
  X509* ca = ReadCert(Ca() + "/ca.pem");
  X509* farmd = ReadCert(dir_.path() + "/farmd.pem");
  ASSERT_TRUE(ca && farmd);
  EXPECT_NE(Verify(ca, farmd, X509_PURPOSE_SSL_SERVER), X509_V_OK);
  X509_free(ca);
  X509_free(farmd);
}

TEST_F(CertificatesTest, AnExistingCaIsKept) {
  ASSERT_OK(CreateCa(Ca(), "first", 30));
  auto before = fs::ReadFile(Ca() + "/ca.key");
  EXPECT_EQ(CreateCa(Ca(), "second", 30).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(fs::ReadFile(Ca() + "/ca.key").value(), before.value());
}

TEST_F(CertificatesTest, BadRequestsAreRefused) {
  EXPECT_EQ(IssueCertificate(Ca(), {"w", {}, false, true, 10}, dir_.path()).code(),
            StatusCode::kNotFound);  // no CA yet
  ASSERT_OK(CreateCa(Ca(), "ca", 30));
  EXPECT_EQ(IssueCertificate(Ca(), {"../w", {}, false, true, 10}, dir_.path()).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(IssueCertificate(Ca(), {".hidden", {}, false, true, 10}, dir_.path()).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(IssueCertificate(Ca(), {"w", {}, false, false, 10}, dir_.path()).code(),
            StatusCode::kInvalidArgument);  // no use
  EXPECT_EQ(IssueCertificate(Ca(), {"s", {}, true, false, 10}, dir_.path()).code(),
            StatusCode::kInvalidArgument);  // a server certificate without names
  EXPECT_EQ(IssueCertificate(Ca(), {"s", {"a,b"}, true, false, 10}, dir_.path()).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateCa(dir_.path() + "/zero", "ca", 0).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::Exists(dir_.path() + "/w.pem"));
}

}  // namespace
}  // namespace farm::net
