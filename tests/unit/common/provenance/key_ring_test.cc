// The key ring: created at first open with private files, the same key after a restart,
// rotation (old signatures keep verifying), revocation (refused, with date and reason),
// the key set document, and a key set pinned before a revocation learning of it (from the
// farm's current set, or by expiring).
#include "common/provenance/key_ring.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "common/fs.h"
#include "common/provenance/verify.h"
#include "tests/support/test_util.h"

namespace farm::provenance {
namespace {

int ModeOf(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 0777;
}

class KeyRingTest : public ::testing::Test {
 protected:
  std::string dir() const { return tmp_.path() + "/provenance"; }
  std::unique_ptr<KeyRing> Open() {
    auto ring = KeyRing::Open(dir(), clock_);
    EXPECT_TRUE(ring.ok()) << ring.status().ToString();
    return ring.ok() ? std::move(ring).value() : nullptr;
  }
  // A signed statement about one wheel, and that wheel.
  std::pair<Envelope, Subject> Signed(const KeyRing& ring) {
    Subject wheel{.name = "pkg-1.0-cp311-cp311-linux_x86_64.whl", .sha256 = std::string(64, 'a')};
    BuildFacts facts{.wheel = wheel, .farm_id = ring.farm_id()};
    return {ring.SignStatement(BuildStatementJson(facts)).value(), wheel};
  }

  testing::ScopedTempDir tmp_;
  testing::FakeClock clock_;
};

TEST_F(KeyRingTest, FirstOpenCreatesPrivateFilesAndReopenKeepsTheKey) {
  auto ring = Open();
  ASSERT_NE(ring, nullptr);
  KeySet set = ring->Keys();
  ASSERT_EQ(set.keys.size(), 1u);
  const PublicKey& k = set.keys[0];
  EXPECT_EQ(k.state, KeyState::kActive);
  EXPECT_EQ(k.created, "2023-11-14T22:13:20.000Z");
  EXPECT_EQ(ModeOf(dir()), 0700);
  EXPECT_EQ(ModeOf(dir() + "/keys.json"), 0600);
  EXPECT_EQ(ModeOf(dir() + "/" + k.keyid + ".pem"), 0600);
  EXPECT_EQ(ring->farm_id().size(), 16u);

  auto again = Open();
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->farm_id(), ring->farm_id());
  EXPECT_EQ(again->Keys().Active()->keyid, k.keyid);
  auto [envelope, wheel] = Signed(*again);
  EXPECT_TRUE(CheckEnvelope(envelope, ring->Keys()).ok);
}

TEST_F(KeyRingTest, RefusesKeysOtherUsersCanRead) {
  auto ring = Open();
  ASSERT_NE(ring, nullptr);
  std::string pem = dir() + "/" + ring->Keys().keys[0].keyid + ".pem";
  ASSERT_EQ(::chmod(pem.c_str(), 0644), 0);
  auto refused = KeyRing::Open(dir(), clock_);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("chmod 600"), std::string::npos);
  ASSERT_EQ(::chmod(pem.c_str(), 0600), 0);
  ASSERT_EQ(::chmod(dir().c_str(), 0755), 0);
  EXPECT_NE(Open(), nullptr);
  EXPECT_EQ(ModeOf(dir()), 0700) << "the directory is closed again";
}

TEST_F(KeyRingTest, RefusesAPrivateKeyThatIsNotTheActiveOne) {
  auto ring = Open();
  ASSERT_NE(ring, nullptr);
  std::string pem = dir() + "/" + ring->Keys().keys[0].keyid + ".pem";
  auto other = Ed25519Key::Generate().value();
  ASSERT_OK(fs::WriteFileAtomic(pem, other->PrivatePem().value(), 0600));
  auto refused = KeyRing::Open(dir(), clock_);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("not the active key"), std::string::npos);
}

TEST_F(KeyRingTest, RotationKeepsOldSignaturesValid) {
  auto ring = Open();
  ASSERT_NE(ring, nullptr);
  std::string first = ring->Keys().Active()->keyid;
  auto [before, wheel] = Signed(*ring);
  clock_.Advance(3600'000);
  auto made = ring->Rotate();
  ASSERT_OK(made.status());
  KeySet set = ring->Keys();
  ASSERT_EQ(set.keys.size(), 2u);
  EXPECT_EQ(set.Find(first)->state, KeyState::kRetired);
  EXPECT_EQ(set.Find(first)->retired, "2023-11-14T23:13:20.000Z");
  EXPECT_EQ(set.Active()->keyid, made->keyid);
  EXPECT_FALSE(fs::Exists(dir() + "/" + first + ".pem")) << "a retired key's private half stays";

  auto [after, same] = Signed(*ring);
  EXPECT_EQ(after.signatures[0].keyid, made->keyid);
  auto old_check = VerifyWheel(wheel, {before}, set, {});
  EXPECT_TRUE(old_check.ok) << old_check.problems[0];
  EXPECT_EQ(old_check.build_keyid, first);
  EXPECT_TRUE(VerifyWheel(wheel, {after}, set, {}).ok);

  auto reopened = Open();  // the rotation was written down
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(reopened->Keys().Active()->keyid, made->keyid);
}

TEST_F(KeyRingTest, RevokedKeysSignaturesAreRefusedWithDateAndReason) {
  auto ring = Open();
  ASSERT_NE(ring, nullptr);
  auto [before, wheel] = Signed(*ring);
  std::string first = ring->Keys().Active()->keyid;
  clock_.Advance(60'000);
  auto revoked = ring->Revoke(first.substr(0, 12), "key file copied off the host");
  ASSERT_OK(revoked.status());
  EXPECT_EQ(revoked->state, KeyState::kRevoked);
  KeySet set = ring->Keys();
  ASSERT_NE(set.Active(), nullptr) << "revoking the active key makes a new one";
  EXPECT_NE(set.Active()->keyid, first);

  auto check = VerifyWheel(wheel, {before}, set, {});
  ASSERT_FALSE(check.ok);
  ASSERT_EQ(check.problems.size(), 1u);
  EXPECT_NE(check.problems[0].find("revoked on 2023-11-14T22:14:20.000Z"), std::string::npos)
      << check.problems[0];
  EXPECT_NE(check.problems[0].find("key file copied off the host"), std::string::npos);

  auto [after, same] = Signed(*ring);  // the new key signs and verifies
  EXPECT_TRUE(VerifyWheel(wheel, {after}, set, {}).ok);

  // The document a verifier downloads says the same.
  auto parsed = ParseKeySet(ring->KeysJson().value());
  ASSERT_OK(parsed.status());
  EXPECT_EQ(parsed->Find(first)->state, KeyState::kRevoked);
  EXPECT_EQ(parsed->Find(first)->reason, "key file copied off the host");
  EXPECT_FALSE(VerifyWheel(wheel, {before}, *parsed, {}).ok);
}

TEST_F(KeyRingTest, RevokeNamesOneKey) {
  auto ring = Open();
  ASSERT_NE(ring, nullptr);
  std::string id = ring->Keys().Active()->keyid;
  EXPECT_EQ(ring->Revoke(id.substr(0, 4), "r").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ring->Revoke("00000000", "r").status().code(), StatusCode::kNotFound);
  ASSERT_OK(ring->Revoke(id, "r").status());
  EXPECT_EQ(ring->Revoke(id, "r").status().code(), StatusCode::kFailedPrecondition);
}

TEST(KeySetTest, ParserRefusesKeysThatDoNotMatchTheirIds) {
  auto key = Ed25519Key::Generate().value();
  KeySet set{.farm_id = "f", .keys = {{.keyid = key->key_id(), .public_raw = key->public_raw()}}};
  std::string text = KeySetJson(set).value();
  ASSERT_OK(ParseKeySet(text).status());
  std::string wrong = text;
  wrong.replace(wrong.find(key->key_id()), 4, "0000");
  EXPECT_FALSE(ParseKeySet(wrong).ok());
  EXPECT_FALSE(ParseKeySet("{\"version\":2,\"keys\":[]}").ok());
  EXPECT_FALSE(ParseKeySet("{\"version\":1}").ok());
  std::string unknown = text;
  unknown.replace(unknown.find("\"active\""), 8, "\"trusty\"");
  EXPECT_FALSE(ParseKeySet(unknown).ok());
}

// The LOW finding of issue 46: a copy of the key set saved before a revocation went on
// accepting the revoked key's signatures. The served set now expires, and a pinned set
// takes the revocations of the farm's current one.
TEST_F(KeyRingTest, APinnedKeySetLearnsOfARevocationOrExpires) {
  auto ring = Open();
  ASSERT_NE(ring, nullptr);
  auto [before, wheel] = Signed(*ring);
  auto pinned = ParseKeySet(ring->KeysJson().value());  // a user's copy, saved today
  ASSERT_OK(pinned.status());
  EXPECT_EQ(pinned->expires, FormatRfc3339(clock_.NowUnixMs() + kServedKeySetValidityMs));
  std::string first = ring->Keys().Active()->keyid;
  clock_.Advance(60'000);
  ASSERT_OK(ring->Revoke(first, "key file copied off the host").status());
  const int64_t now = clock_.NowUnixMs();
  // The copy alone does not know: this is what a pinned set did before.
  EXPECT_TRUE(VerifyWheel(wheel, {before}, *pinned, {.now_ms = now}).ok);

  auto current = ParseKeySet(ring->KeysJson().value());
  ASSERT_OK(current.status());
  KeySet learned = *pinned;
  auto revoked = ApplyRevocations(&learned, *current);
  ASSERT_OK(revoked.status());
  EXPECT_EQ(*revoked, std::vector<std::string>{first});
  EXPECT_EQ(learned.keys.size(), 1u) << "the farm's new keys are not taken from it";
  auto refused = VerifyWheel(wheel, {before}, learned, {.now_ms = now});
  ASSERT_FALSE(refused.ok);
  EXPECT_NE(refused.problems[0].find("key file copied off the host"), std::string::npos)
      << refused.problems[0];
  EXPECT_TRUE(ApplyRevocations(&learned, *current)->empty());  // once is enough

  // Offline, the copy stops working when it expires, revocation or not.
  const int64_t expiry = clock_.NowUnixMs() - 60'000 + kServedKeySetValidityMs;
  EXPECT_TRUE(VerifyWheel(wheel, {before}, *pinned, {.now_ms = expiry - 1}).ok);
  auto stale = VerifyWheel(wheel, {before}, *pinned, {.now_ms = expiry});
  ASSERT_FALSE(stale.ok);
  EXPECT_NE(stale.problems[0].find("the key set expired on " + pinned->expires), std::string::npos)
      << stale.problems[0];

  // Another farm's set revokes nothing here, and a malformed expiry is refused.
  KeySet other = *current;
  other.farm_id = "another farm";
  EXPECT_EQ(ApplyRevocations(&learned, other).status().code(), StatusCode::kInvalidArgument);
  std::string text = ring->KeysJson().value();
  text.replace(text.find("\"expires\":\"") + 11, 4, "soon");
  EXPECT_FALSE(ParseKeySet(text).ok());
  // farmd's own file has no expiry and never expires.
  EXPECT_TRUE(ring->Keys().expires.empty());
  EXPECT_EQ(KeySetExpired(ring->Keys(), now + 10 * kServedKeySetValidityMs), "");
}

}  // namespace
}  // namespace farm::provenance
