// Statements and their verification: what the farm signs reads back, and a flipped byte
// in the wheel's digest, the statement or the signature refuses the wheel.
#include "common/provenance/verify.h"

#include <gtest/gtest.h>

#include <utility>

#include "common/provenance/pep740.h"
#include "common/sha256.h"
#include "tests/support/test_util.h"

namespace farm::provenance {
namespace {

WorkerFacts Worker() {
  return {.id = "w-1",
          .name = "gpu-box-1",
          .hostname = "box1",
          .platform = "linux_x86_64",
          .driver_version = "580.65",
          .driver_cuda_version = "13.0",
          .gpus = {{.name = "NVIDIA H100", .compute_capability = "9.0", .uuid = "GPU-1"}},
          .toolkits = {"13.0 at /usr/local/cuda"}};
}

BuildFacts Build(const Subject& wheel) {
  return {
      .wheel = wheel,
      .farm_id = "0123456789abcdef",
      .farmd_version = "0.1.0",
      .worker = Worker(),
      .recipe_name = "attn_example",
      .recipe_version = "1.0",
      .recipe_sha256 = Sha256Hex("name: attn_example"),
      .project = "attn-example",
      .project_owner = "alice",
      .submitted_by = "bob",
      .cell = {.python = "3.11", .cuda = "13.0", .arch_list = "9.0", .platform = "linux_x86_64"},
      .source = {.name = "source archive", .sha256 = Sha256Hex("tar")},
      .patches = {{.name = "fix.patch", .sha256 = Sha256Hex("diff")}},
      .consumed_wheels = {{.name = "triton-3.5.whl", .sha256 = Sha256Hex("t")}},
      .environment = {{.name = "python", .annotations = {{"version", "3.11.2"}}}},
      .build_id = 3,
      .job_id = 7,
      .attempt = 2,
      .started_ms = 1'700'000'000'000,
      .finished_ms = 1'700'000'060'000,
      .log_sha256 = Sha256Hex("log"),
      .log_lines = 12};
}

ValidationFacts Validation(const Subject& wheel, const std::string& verdict,
                           const std::string& cc) {
  return {.wheel = wheel,
          .validated = wheel,
          .farm_id = "0123456789abcdef",
          .verdict = verdict,
          .gpu_name = "NVIDIA GPU",
          .compute_capability = cc,
          .cases = {{.name = "fp16",
                     .passed = verdict == "passed",
                     .cosine = 0.9993,
                     .throughput = 718,
                     .throughput_unit = "TOPS"}},
          .worker = Worker(),
          .job_id = 7,
          .attempt = 2,
          .finished_ms = 1'700'000'070'000};
}

class VerifyTest : public ::testing::Test {
 protected:
  VerifyTest() : key_(Ed25519Key::Generate().value()) {
    keys_.farm_id = "0123456789abcdef";
    keys_.keys.push_back({.keyid = key_->key_id(), .public_raw = key_->public_raw()});
  }
  Envelope Sign(const std::string& statement) {
    return SignEnvelope(*key_, kInTotoPayloadType, statement).value();
  }

  Subject wheel_{.name = "attn_example-1.0+cu130-cp311-cp311-linux_x86_64.whl",
                 .sha256 = Sha256Hex("wheel bytes")};
  std::unique_ptr<Ed25519Key> key_;
  KeySet keys_;
};

TEST_F(VerifyTest, BuildStatementReadsBackWhatWasAttested) {
  auto st = ParseStatement(BuildStatementJson(Build(wheel_)));
  ASSERT_OK(st.status());
  EXPECT_EQ(st->predicate_type, kSlsaPredicateType);
  ASSERT_EQ(st->subjects.size(), 1u);
  EXPECT_EQ(st->subjects[0].name, wheel_.name);
  EXPECT_EQ(st->subjects[0].sha256, wheel_.sha256);
  const BuildSummary& b = st->build;
  EXPECT_EQ(b.builder_id, "urn:gpu-wheel-farm:farm:0123456789abcdef");
  EXPECT_EQ(b.worker, "gpu-box-1 (host box1)");
  EXPECT_EQ(b.worker_gpus, "NVIDIA H100 (9.0)");
  EXPECT_EQ(b.driver, "580.65 (CUDA 13.0)");
  EXPECT_EQ(b.toolkits, "13.0 at /usr/local/cuda");
  EXPECT_EQ(b.recipe, "attn_example 1.0 (recipe sha256 " + Sha256Hex("name: attn_example") + ")");
  EXPECT_EQ(b.source, "archive sha256 " + Sha256Hex("tar"));
  EXPECT_EQ(b.project, "attn-example");
  EXPECT_EQ(b.project_owner, "alice");
  EXPECT_EQ(b.cell, "python 3.11, cuda 13.0, arch 9.0, linux_x86_64");
  // Axes a cell does not have leave no empty label behind ("arch 9.0;12.0a, ").
  BuildFacts bare = Build(wheel_);
  bare.cell = {.python = "3.11", .arch_list = "9.0;12.0a"};
  auto plain = ParseStatement(BuildStatementJson(bare));
  ASSERT_OK(plain.status());
  EXPECT_EQ(plain->build.cell, "python 3.11, arch 9.0;12.0a");
  EXPECT_EQ(b.started, "2023-11-14T22:13:20.000Z");
  EXPECT_EQ(b.finished, "2023-11-14T22:14:20.000Z");
  EXPECT_EQ(b.log_sha256, Sha256Hex("log"));
  EXPECT_EQ(b.patches, 1);
  EXPECT_EQ(b.consumed_wheels, 1);
}

TEST_F(VerifyTest, GitSourceIsNamedByCommit) {
  BuildFacts f = Build(wheel_);
  f.source = {.name = "git source", .uri = "git+https://example.com/r.git", .git_commit = "abc123"};
  auto st = ParseStatement(BuildStatementJson(f));
  ASSERT_OK(st.status());
  EXPECT_EQ(st->build.source, "git git+https://example.com/r.git @ abc123");
}

TEST_F(VerifyTest, ValidationStatementReadsBack) {
  auto st = ParseStatement(ValidationStatementJson(Validation(wheel_, "passed", "12.0")));
  ASSERT_OK(st.status());
  EXPECT_EQ(st->predicate_type, kValidationPredicateType);
  EXPECT_EQ(st->validation.verdict, "passed");
  EXPECT_EQ(st->validation.gpu_name, "NVIDIA GPU");
  EXPECT_EQ(st->validation.compute_capability, "12.0");
  EXPECT_EQ(st->validation.cases, 1);
  EXPECT_EQ(st->validation.cases_passed, 1);
  EXPECT_EQ(st->validation.validated_sha256, wheel_.sha256);
  EXPECT_EQ(st->validation.worker, "gpu-box-1 (host box1)");
}

TEST_F(VerifyTest, SignedWheelVerifies) {
  auto v = VerifyWheel(wheel_, {Sign(BuildStatementJson(Build(wheel_)))}, keys_, {});
  ASSERT_TRUE(v.ok) << v.problems[0];
  ASSERT_TRUE(v.build.has_value());
  EXPECT_EQ(v.build_keyid, key_->key_id());
}

TEST_F(VerifyTest, FlippedByteInTheWheelDigestIsRefused) {
  Envelope e = Sign(BuildStatementJson(Build(wheel_)));
  Subject other = wheel_;
  other.sha256[10] = other.sha256[10] == '0' ? '1' : '0';
  auto v = VerifyWheel(other, {e}, keys_, {});
  ASSERT_FALSE(v.ok);
  EXPECT_NE(v.problems[0].find("the wheel was changed or replaced"), std::string::npos)
      << v.problems[0];
}

TEST_F(VerifyTest, FlippedByteInTheStatementIsRefused) {
  Envelope good = Sign(BuildStatementJson(Build(wheel_)));
  for (size_t at : {size_t{0}, good.payload.size() / 2, good.payload.size() - 1}) {
    Envelope e = good;
    e.payload[at] ^= 0x01;
    auto v = VerifyWheel(wheel_, {e}, keys_, {});
    ASSERT_FALSE(v.ok) << at;
    EXPECT_NE(v.problems[0].find("does not verify"), std::string::npos) << v.problems[0];
  }
  Envelope type = good;
  type.payload_type = "application/json";
  EXPECT_FALSE(VerifyWheel(wheel_, {type}, keys_, {}).ok);
}

TEST_F(VerifyTest, FlippedByteInTheSignatureIsRefused) {
  Envelope good = Sign(BuildStatementJson(Build(wheel_)));
  for (size_t at : {size_t{0}, size_t{31}, size_t{63}}) {
    Envelope e = good;
    e.signatures[0].sig[at] ^= 0x80;
    auto v = VerifyWheel(wheel_, {e}, keys_, {});
    ASSERT_FALSE(v.ok) << at;
    EXPECT_NE(v.problems[0].find("does not verify"), std::string::npos) << v.problems[0];
  }
}

TEST_F(VerifyTest, OneBadEnvelopeAmongGoodOnesRefusesTheWheel) {
  Envelope build = Sign(BuildStatementJson(Build(wheel_)));
  Envelope validation = Sign(ValidationStatementJson(Validation(wheel_, "passed", "9.0")));
  validation.payload.back() ^= 0x01;
  auto v = VerifyWheel(wheel_, {build, validation}, keys_, {});
  ASSERT_FALSE(v.ok);
  EXPECT_EQ(v.problems[0].substr(0, 12), "statement 2:");
}

TEST_F(VerifyTest, KeysOutsideTheSetAndRenamedWheelsAreRefused) {
  auto stranger = Ed25519Key::Generate().value();
  Envelope e =
      SignEnvelope(*stranger, kInTotoPayloadType, BuildStatementJson(Build(wheel_))).value();
  auto v = VerifyWheel(wheel_, {e}, keys_, {});
  ASSERT_FALSE(v.ok);
  EXPECT_NE(v.problems[0].find("not in the farm's key set"), std::string::npos);

  Subject renamed = wheel_;
  renamed.name = "attn_example-2.0-cp311-cp311-linux_x86_64.whl";
  v = VerifyWheel(renamed, {Sign(BuildStatementJson(Build(wheel_)))}, keys_, {});
  ASSERT_FALSE(v.ok);
  EXPECT_NE(v.problems[0].find("attests these bytes as"), std::string::npos);

  EXPECT_FALSE(VerifyWheel(wheel_, {}, keys_, {}).ok);
  // A validation alone proves nothing about the build.
  v = VerifyWheel(wheel_, {Sign(ValidationStatementJson(Validation(wheel_, "passed", "9.0")))},
                  keys_, {});
  ASSERT_FALSE(v.ok);
  EXPECT_EQ(v.problems[0], "no signed build provenance for this wheel");
}

TEST_F(VerifyTest, RequiredArchNeedsAPassedValidationOnThatCapability) {
  std::vector<Envelope> envelopes{
      Sign(BuildStatementJson(Build(wheel_))),
      Sign(ValidationStatementJson(Validation(wheel_, "passed", "9.0"))),
      Sign(ValidationStatementJson(Validation(wheel_, "failed", "12.0")))};
  for (const char* ok : {"9.0", "sm_90", "sm90a", "90"}) {
    auto v = VerifyWheel(wheel_, envelopes, keys_, {.require_validated_arch = ok});
    EXPECT_TRUE(v.ok) << ok;
    EXPECT_EQ(v.validations.size(), 2u);
  }
  auto v = VerifyWheel(wheel_, envelopes, keys_, {.require_validated_arch = "sm_120"});
  ASSERT_FALSE(v.ok);
  EXPECT_NE(v.problems[0].find("compute capability 12.0; seen: passed on NVIDIA GPU (9.0), "
                               "failed on NVIDIA GPU (12.0)"),
            std::string::npos)
      << v.problems[0];
  EXPECT_FALSE(VerifyWheel(wheel_, envelopes, keys_, {.require_validated_arch = "fast"}).ok);
}

TEST_F(VerifyTest, TheOwnerAskedForAndTheFarmsRecordMustBeTheStatements) {
  std::vector<Envelope> signed_by_farm{Sign(BuildStatementJson(Build(wheel_)))};
  EXPECT_TRUE(VerifyWheel(wheel_, signed_by_farm, keys_, {.require_owner = "alice"}).ok);
  EXPECT_TRUE(VerifyWheel(wheel_, signed_by_farm, keys_, {.recorded_owner = "alice"}).ok);

  auto other = VerifyWheel(wheel_, signed_by_farm, keys_, {.require_owner = "mallory"});
  ASSERT_FALSE(other.ok);
  EXPECT_EQ(other.problems[0],
            "the build statement names owner alice of project attn-example, not mallory "
            "(--owner)");
  // The farm has given the name to someone else since (a transfer).
  auto moved = VerifyWheel(wheel_, signed_by_farm, keys_, {.recorded_owner = "carol"});
  ASSERT_FALSE(moved.ok);
  EXPECT_NE(moved.problems[0].find("the farm records carol as the owner of project attn-example"),
            std::string::npos)
      << moved.problems[0];

  // A statement that names no owner (signed before projects had owners) satisfies neither.
  BuildFacts old = Build(wheel_);
  old.project.clear();
  old.project_owner.clear();
  std::vector<Envelope> unowned{Sign(BuildStatementJson(old))};
  EXPECT_TRUE(VerifyWheel(wheel_, unowned, keys_, {}).ok);
  auto before = VerifyWheel(wheel_, unowned, keys_, {.recorded_owner = "alice"});
  EXPECT_TRUE(before.ok);  // the farm's old wheels keep verifying, and it says why
  ASSERT_EQ(before.notes.size(), 1u);
  EXPECT_NE(before.notes[0].find("predates project owners"), std::string::npos);
  auto none = VerifyWheel(wheel_, unowned, keys_, {.require_owner = "alice"});
  ASSERT_FALSE(none.ok);
  EXPECT_NE(none.problems[0].find("names no owner"), std::string::npos) << none.problems[0];
}

TEST(ComputeCapabilityTest, Normalizes) {
  constexpr std::pair<const char*, std::string_view> kCases[] = {
      {"12.1a", "12.1"}, {"sm_121a", "12.1"}, {"sm_100f", "10.0"}, {"sm_75", "7.5"},
      {"7", ""},         {"12.10", ""},       {"sm_x0", ""},
  };
  for (const auto& [given, cc] : kCases) EXPECT_EQ(NormalizeComputeCapability(given), cc) << given;
}

TEST_F(VerifyTest, Pep740ProvenanceCarriesTheSameSignatures) {
  std::vector<Envelope> envelopes{
      Sign(BuildStatementJson(Build(wheel_))),
      Sign(ValidationStatementJson(Validation(wheel_, "passed", "9.0")))};
  std::string doc = Pep740Provenance(envelopes, keys_.farm_id, "/api/v1/provenance/keys");
  auto back = ParsePep740Provenance(doc);
  ASSERT_OK(back.status());
  ASSERT_EQ(back->size(), 2u);
  auto v = VerifyWheel(wheel_, *back, keys_, {.require_validated_arch = "9.0"});
  EXPECT_TRUE(v.ok) << (v.problems.empty() ? "" : v.problems[0]);
  EXPECT_FALSE(ParsePep740Provenance("{\"attestation_bundles\":[{}]}").ok());
  EXPECT_FALSE(ParsePep740Provenance("[]").ok());
}

TEST_F(VerifyTest, StatementParserRefusesWhatIsNotAStatement) {
  EXPECT_FALSE(ParseStatement("{}").ok());
  EXPECT_FALSE(ParseStatement(R"({"_type":"https://in-toto.io/Statement/v1","subject":[],
      "predicateType":"p","predicate":{}})")
                   .ok());
  EXPECT_FALSE(ParseStatement(R"({"_type":"https://in-toto.io/Statement/v1",
      "subject":[{"name":"w","digest":{"sha256":"ABC"}}],"predicateType":"p","predicate":{}})")
                   .ok());
  EXPECT_FALSE(ParseStatement(R"({"_type":"https://in-toto.io/Statement/v1",
      "subject":[{"name":"w","digest":{"sha256":")" +
                              std::string(64, 'a') + R"("}}],"predicateType":"p","predicate":[]})")
                   .ok());
}

}  // namespace
}  // namespace farm::provenance
