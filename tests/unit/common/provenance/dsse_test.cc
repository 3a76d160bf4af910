// Base64, Ed25519 and DSSE: known-answer vectors (RFC 4648, RFC 8032, the DSSE spec's PAE
// example), round trips, and refusal of every altered byte.
#include "common/provenance/dsse.h"

#include <gtest/gtest.h>

#include "common/provenance/base64.h"
#include "common/provenance/ed25519.h"
#include "common/sha256.h"
#include "tests/support/test_util.h"

namespace farm::provenance {
namespace {

std::string Unhex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

// RFC 8032 section 7.1, TEST 1 and TEST 2.
constexpr char kSecret1[] = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
constexpr char kPublic1[] = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
constexpr char kSig1[] =
    "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701c"
    "f9b46bd25bf5f0595bbe24655141438e7a100b";
constexpr char kSecret2[] = "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb";
constexpr char kPublic2[] = "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c";
constexpr char kSig2[] =
    "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0"
    "f11d8c387b2eaeb4302aeeb00d291612bb0c00";

// A PKCS#8 PEM of a raw Ed25519 secret (RFC 8410's fixed DER prefix).
std::string PemOfSecret(const std::string& secret_hex) {
  std::string der = Unhex("302e020100300506032b657004220420") + Unhex(secret_hex);
  return "-----BEGIN PRIVATE KEY-----\n" + Base64Encode(der) + "\n-----END PRIVATE KEY-----\n";
}

TEST(Base64Test, Rfc4648Vectors) {
  const std::pair<const char*, const char*> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(Base64Encode(plain), encoded);
    auto back = Base64Decode(encoded);
    ASSERT_TRUE(back.ok()) << encoded;
    EXPECT_EQ(*back, plain);
  }
}

TEST(Base64Test, AcceptsUrlSafeAndUnpaddedAsDsseAllows) {
  std::string bytes = "\xfb\xff\xbf";
  EXPECT_EQ(Base64Encode(bytes), "+/+/");
  EXPECT_EQ(Base64Decode("-_-_").value(), bytes);
  EXPECT_EQ(Base64Decode("Zm8").value(), "fo");
}

TEST(Base64Test, RefusesWhatNoEncoderWrites) {
  for (const char* bad :
       {"Zm9v!", "Z", "Zm=9", "Zg=", "Zh==", "+_", "Zm9v====", "Zg===", "Zm9v\n"}) {
    EXPECT_FALSE(Base64Decode(bad).ok()) << bad;
  }
}

TEST(Ed25519Test, Rfc8032Vectors) {
  auto key1 = Ed25519Key::FromPrivatePem(PemOfSecret(kSecret1));
  ASSERT_OK(key1.status());
  EXPECT_EQ(ToHex((*key1)->public_raw()), kPublic1);
  EXPECT_EQ(ToHex((*key1)->Sign("").value()), kSig1);
  EXPECT_TRUE(VerifyEd25519(Unhex(kPublic1), "", Unhex(kSig1)));

  auto key2 = Ed25519Key::FromPrivatePem(PemOfSecret(kSecret2));
  ASSERT_OK(key2.status());
  EXPECT_EQ(ToHex((*key2)->Sign(Unhex("72")).value()), kSig2);
  EXPECT_TRUE(VerifyEd25519(Unhex(kPublic2), Unhex("72"), Unhex(kSig2)));
  EXPECT_FALSE(VerifyEd25519(Unhex(kPublic2), Unhex("73"), Unhex(kSig2)));
  EXPECT_FALSE(VerifyEd25519(Unhex(kPublic1), Unhex("72"), Unhex(kSig2)));
}

TEST(Ed25519Test, KeyIdIsTheSha256OfTheRawPublicKey) {
  auto key = Ed25519Key::FromPrivatePem(PemOfSecret(kSecret1)).value();
  EXPECT_EQ(key->key_id(), Sha256Hex(Unhex(kPublic1)));
  EXPECT_EQ(KeyIdOf(key->public_raw()), key->key_id());
}

TEST(Ed25519Test, PemRoundTripKeepsTheKey) {
  auto key = Ed25519Key::Generate().value();
  auto again = Ed25519Key::FromPrivatePem(key->PrivatePem().value()).value();
  EXPECT_EQ(again->key_id(), key->key_id());
  std::string sig = key->Sign("message").value();
  EXPECT_TRUE(VerifyEd25519(again->public_raw(), "message", sig));
  std::string pem = key->PublicPem().value();
  EXPECT_TRUE(pem.starts_with("-----BEGIN PUBLIC KEY-----")) << pem;
}

TEST(Ed25519Test, RefusesOtherKeysAndWrongLengths) {
  EXPECT_FALSE(Ed25519Key::FromPrivatePem("not a key").ok());
  // A P-256 key (from `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256`).
  std::string p256 =
      "-----BEGIN PRIVATE KEY-----\n"
      "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgJ8sE+nL69RJRsX+g\n"
      "RVKlEoAtTVozD2RWyvtOAioykGChRANCAAQwhUojp/eoJNEsanxcs58X44xpdqn8\n"
      "Y92Ti5quT1se0g4mFkPC6R3SX6n1s81Wbyl4PpRw4EP1yjr2/wVGeN04\n"
      "-----END PRIVATE KEY-----\n";
  auto other = Ed25519Key::FromPrivatePem(p256);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("not an Ed25519 key"), std::string::npos)
      << other.status().message();
  auto key = Ed25519Key::Generate().value();
  std::string sig = key->Sign("m").value();
  EXPECT_FALSE(VerifyEd25519(key->public_raw().substr(1), "m", sig));
  EXPECT_FALSE(VerifyEd25519(key->public_raw(), "m", sig.substr(1)));
  EXPECT_FALSE(Ed25519Key::PublicPemOf("short").ok());
}

TEST(DsseTest, PaeMatchesTheSpecExample) {
  // secure-systems-lab/dsse protocol.md, "Test vectors".
  EXPECT_EQ(Pae("http://example.com/HelloWorld", "hello world"),
            "DSSEv1 29 http://example.com/HelloWorld 11 hello world");
  EXPECT_EQ(Pae("", ""), "DSSEv1 0  0 ");
  EXPECT_EQ(Pae(kInTotoPayloadType, std::string(1000, 'x')).substr(0, 48),
            "DSSEv1 28 application/vnd.in-toto+json 1000 xxxx");
}

TEST(DsseTest, SignedEnvelopeRoundTripsThroughJson) {
  auto key = Ed25519Key::Generate().value();
  Envelope e = SignEnvelope(*key, kInTotoPayloadType, "{\"a\":1}").value();
  ASSERT_EQ(e.signatures.size(), 1u);
  EXPECT_EQ(e.signatures[0].keyid, key->key_id());
  EXPECT_TRUE(
      VerifyEd25519(key->public_raw(), Pae(e.payload_type, e.payload), e.signatures[0].sig));
  std::string line = EnvelopeJson(e);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  auto back = ParseEnvelope(line);
  ASSERT_OK(back.status());
  EXPECT_EQ(back->payload, e.payload);
  EXPECT_EQ(back->payload_type, e.payload_type);
  EXPECT_EQ(back->signatures[0].sig, e.signatures[0].sig);
  auto lines = ParseEnvelopeLines("\n" + EnvelopeLines({e, e}) + "\n");
  ASSERT_OK(lines.status());
  EXPECT_EQ(lines->size(), 2u);
}

TEST(DsseTest, ParserRefusesMalformedEnvelopesSayingWhy) {
  const std::pair<const char*, const char*> cases[] = {
      {"[]", "not a JSON object"},
      {"{", "malformed JSON"},
      {R"({"payload":"e30=","signatures":[{"sig":"AA=="}]})", "payloadType"},
      {R"({"payloadType":"t","payload":"e30","signatures":[]})", "no signature"},
      {R"({"payloadType":"t","payload":"!!","signatures":[{"sig":"AA=="}]})", "payload"},
      {R"({"payloadType":"t","payload":"e30=","signatures":[{"sig":7}]})", "sig"},
      {R"({"payloadType":"t","payload":"e30=","signatures":{}})", "signatures"},
  };
  for (const auto& [text, why] : cases) {
    auto e = ParseEnvelope(text);
    ASSERT_FALSE(e.ok()) << text;
    EXPECT_NE(e.status().message().find(why), std::string::npos) << e.status().message();
  }
  EXPECT_FALSE(ParseEnvelope(std::string(kMaxEnvelopeBytes + 1, ' ')).ok());
  std::string deep(100, '[');
  EXPECT_FALSE(ParseEnvelope(deep + std::string(100, ']')).ok());
  auto lines = ParseEnvelopeLines("{}\n");
  ASSERT_FALSE(lines.ok());
  EXPECT_NE(lines.status().message().find("line 1"), std::string::npos);
}

}  // namespace
}  // namespace farm::provenance
