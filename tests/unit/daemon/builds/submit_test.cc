// Planning and storing a submitted build against in-memory ports: a job per cell with its
// key, reuse of a succeeded key, names checked before and claimed after, nothing stored on
// a refusal, a graph stored required-first with its jobs held, and a provisioned recipe's
// cells locked, each lock in its job's needs and key.
#include "daemon/builds/submit.h"

#include <gtest/gtest.h>

#include "common/lock/pip_resolver.h"
#include "common/sha256.h"
#include "daemon/builds/build_key.h"
#include "daemon/locks/env_locker.h"
#include "daemon/model/convert.h"
#include "tests/support/test_util.h"
#include "tests/unit/daemon/builds/in_memory_store.h"

namespace farm::builds {
namespace {

constexpr char kCommit[] = "0123456789abcdef0123456789abcdef01234567";

std::string Recipe(const std::string& name, const std::string& extra = "") {
  return "name: " + name +
         "\n"
         "version: \"1.0\"\n"
         "source:\n"
         "  git: {url: \"https://example.invalid/" +
         name + ".git\", commit: \"" + kCommit +
         "\"}\n"
         "build: |\n"
         "  echo build\n"
         "matrix:\n"
         "  python: [\"3.11\", \"3.12\"]\n"
         "  cuda: [\"12.8\"]\n"
         "  arch_lists: [\"9.0\"]\n" +
         extra;
}

class SubmitTest : public ::testing::Test {
 protected:
  SubmitTest()
      : submitter_(SubmitDeps{.plan = {.builds = &store_,
                                       .sources = {.sources = &store_, .clock = &clock_},
                                       .clock = &clock_,
                                       .max_attempts = 5},
                              .control = &store_,
                              .names = &store_,
                              .inputs_key = KeyWithInputs}) {}

  farm::v1::SubmitBuildRequest Request(const std::string& yaml) {
    farm::v1::SubmitBuildRequest req;
    req.set_recipe_yaml(yaml);
    req.set_recipe_path("attn.yaml");
    return req;
  }

  const Principal alice_{"alice", "submitter", ""};
  const Principal bob_{"bob", "submitter", ""};
  testing::InMemoryStore store_;
  farm::testing::FakeClock clock_;
  Submitter submitter_;
};

TEST_F(SubmitTest, StoresAJobPerCellWithItsKeyAndClaimsTheName) {
  audit::Entry entry{audit::Action::kBuildSubmit, "recipe file attn.yaml"};
  auto id =
      submitter_.Submit(Request(Recipe("attn", "retry: {max_attempts: 4}\n")), alice_, &entry);
  ASSERT_OK(id.status());
  EXPECT_EQ(entry.target, "recipe attn");
  EXPECT_EQ(entry.done, "build " + std::to_string(*id));
  EXPECT_EQ(store_.builds[*id].submitted_by, "alice");
  auto jobs = store_.ListJobs(*id);
  ASSERT_OK(jobs.status());
  ASSERT_EQ(jobs->size(), 2u);
  for (const store::JobRow& job : *jobs) {
    EXPECT_EQ(job.build_key.size(), 64u);
    EXPECT_EQ(job.max_attempts, 4);  // the recipe's
    EXPECT_EQ(job.reused_from, 0);
  }
  EXPECT_NE((*jobs)[0].build_key, (*jobs)[1].build_key);
  EXPECT_EQ(store_.names.at("attn").owner, "alice");
  ASSERT_EQ(store_.links.size(), 1u);
  EXPECT_TRUE(store_.links[0].merge_in_flight);
}

TEST_F(SubmitTest, ASucceededKeyAnswersTheSameJobUnlessForced) {
  auto first = submitter_.Submit(Request(Recipe("attn")), alice_, nullptr);
  ASSERT_OK(first.status());
  auto built = store_.ListJobs(*first);
  ASSERT_OK(built.status());
  for (const store::JobRow& job : *built) {
    store_.jobs[job.id].state = store::kJobSucceeded;
    store_.AddArtifact(job.id, 1, std::string(64, 'a'));
  }
  auto again = submitter_.Submit(Request(Recipe("attn")), alice_, nullptr);
  ASSERT_OK(again.status());
  auto reused = store_.ListJobs(*again);
  ASSERT_OK(reused.status());
  for (const store::JobRow& job : *reused) EXPECT_GT(job.reused_from, 0);
  farm::v1::SubmitBuildRequest forced = Request(Recipe("attn"));
  forced.set_force(true);
  auto rebuilt = submitter_.Submit(forced, alice_, nullptr);
  ASSERT_OK(rebuilt.status());
  auto forced_jobs = store_.ListJobs(*rebuilt);
  ASSERT_OK(forced_jobs.status());
  for (const store::JobRow& job : *forced_jobs) EXPECT_EQ(job.reused_from, 0);
  EXPECT_FALSE(store_.links.back().merge_in_flight);
  EXPECT_TRUE(store_.links.back().force);
}

TEST_F(SubmitTest, ANameOfAnotherIsRefusedAndNothingIsStoredOrClaimed) {
  store_.names["attn"] = {"attn", "bob", 0, 0};
  auto id = submitter_.Submit(Request(Recipe("attn")), alice_, nullptr);
  EXPECT_EQ(id.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(id.status().message().find("belongs to bob"), std::string::npos);
  EXPECT_TRUE(store_.builds.empty());
  // A refused check of a required recipe's name stores nothing either, and claims nothing.
  store_.names["dep"] = {"dep", "bob", 0, 0};
  farm::v1::SubmitBuildRequest req =
      Request(Recipe("app", "requires:\n  - recipe: dep\n    for: build\n"));
  *req.add_requirements() = Request(Recipe("dep"));
  EXPECT_EQ(submitter_.Submit(req, alice_, nullptr).status().code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(store_.builds.empty());
  EXPECT_EQ(store_.names.count("app"), 0u);
}

TEST_F(SubmitTest, AGraphStoresTheRequiredBuildFirstAndHoldsTheConsumersKeys) {
  farm::v1::SubmitBuildRequest req =
      Request(Recipe("app", "requires:\n  - recipe: dep\n    for: build\n"));
  *req.add_requirements() = Request(Recipe("dep"));
  auto id = submitter_.Submit(req, alice_, nullptr);
  ASSERT_OK(id.status());
  ASSERT_EQ(store_.links.size(), 2u);  // dep's build, then app's
  const store::BuildLinks& app = store_.links[1];
  ASSERT_EQ(app.requirements.size(), 2u);  // each of app's two cells on its dep cell
  EXPECT_TRUE(app.requirements[0].for_build);
  EXPECT_EQ(app.requirements[0].recipe_name, "dep");
  EXPECT_NE(app.requirements[0].required_job_id, app.requirements[1].required_job_id);
  EXPECT_TRUE(app.inputs_key);  // settles jobs whose required jobs ended already
  auto held = store_.ListJobs(*id);
  ASSERT_OK(held.status());
  for (const store::JobRow& job : *held) {
    EXPECT_TRUE(job.build_key.empty());  // it waits for the wheels it consumes
    EXPECT_EQ(job.key_base.size(), 64u);
  }
  EXPECT_EQ(store_.names.at("dep").owner, "alice");
}

TEST_F(SubmitTest, ABadRecipeIsRefusedBeforeAnythingIsRead) {
  auto id = submitter_.Submit(Request("name: [\n"), alice_, nullptr);
  EXPECT_EQ(id.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(store_.builds.empty());
  EXPECT_TRUE(store_.names.empty());
}

// Resolves each request to torch at the version it asks for and `tool` at
// `tool_version`: what the index holds now.
class OneToolResolver final : public lock::Resolver {
 public:
  Result<lock::EnvLock> Resolve(const lock::ResolveRequest& r) override {
    calls += 1;
    lock::EnvLock out;
    out.python = r.python;
    out.platform = r.platform;
    out.index_name = r.index_name;
    out.requirements = r.requirements;
    for (const auto& [name, version] :
         {std::pair<std::string, std::string>{"torch", "2.8.0"}, {"tool", tool_version}}) {
      std::string file = name + "-" + version + "-py3-none-any.whl";
      out.packages.push_back(
          {name, version, "", file, "https://up/" + file, Sha256Hex(name + version), 10});
    }
    return out;
  }
  int calls = 0;
  std::string tool_version = "1.0";
};

std::string ProvisionedRecipe() {
  return "name: attn\n"
         "version: \"1.0\"\n"
         "source:\n"
         "  git: {url: \"https://example.invalid/attn.git\", commit: \"" +
         std::string(kCommit) +
         "\"}\n"
         "build: |\n"
         "  echo build\n"
         "matrix:\n"
         "  python: [\"3.11\", \"3.12\"]\n"
         "  torch: [\"2.8\"]\n"
         "  cuda: [\"12.8\"]\n"
         "  arch_lists: [\"9.0\"]\n"
         "environment:\n"
         "  torch: {\"2.8\": \"2.8.0\"}\n"
         "  build_requirements: [tool]\n";
}

std::vector<std::string> NeedsLocks(testing::InMemoryStore& store, int64_t build_id) {
  std::vector<std::string> digests;
  auto jobs = store.ListJobs(build_id);  // kept: a range-for over *temporary reads freed memory
  for (const store::JobRow& job : *jobs) {
    digests.push_back(model::ParseBlob<farm::v1::JobNeeds>(job.needs).lock_digest());
  }
  return digests;
}

TEST_F(SubmitTest, AProvisionedRecipeNeedsALockerAndStoresNothingWithout) {
  auto id = submitter_.Submit(Request(ProvisionedRecipe()), alice_, nullptr);
  EXPECT_EQ(id.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(store_.builds.empty());
  EXPECT_EQ(store_.names.count("attn"), 0u);
}

TEST_F(SubmitTest, EachProvisionedCellIsLockedAndItsLockIsPartOfItsKey) {
  OneToolResolver resolver;
  locks::EnvLocker locker(
      &resolver, &store_,
      [](const std::string& variant) -> Result<locks::IndexRoute> {
        return locks::IndexRoute{variant, "http://farmd/" + variant + "/", "https://up/"};
      },
      &clock_, locks::LockerOptions{.sleep = [](int64_t) {}});
  submitter_.SetLocker(&locker);
  auto first = submitter_.Submit(Request(ProvisionedRecipe()), alice_, nullptr);
  ASSERT_OK(first.status());
  std::vector<std::string> digests = NeedsLocks(store_, *first);
  ASSERT_EQ(digests.size(), 2u);
  EXPECT_EQ(resolver.calls, 2);  // one environment per Python
  EXPECT_NE(digests[0], digests[1]);
  for (const std::string& d : digests) EXPECT_EQ(store_.lock_rows.count(d), 1u) << d;
  // The same locks again are the same jobs; a new release of the tool is a new build.
  auto again = submitter_.Submit(Request(ProvisionedRecipe()), alice_, nullptr);
  ASSERT_OK(again.status());
  resolver.tool_version = "1.1";
  auto newer = submitter_.Submit(Request(ProvisionedRecipe()), alice_, nullptr);
  ASSERT_OK(newer.status());
  auto keys = [&](int64_t id) {
    std::vector<std::string> out;
    auto jobs = store_.ListJobs(id);
    for (const store::JobRow& job : *jobs) out.push_back(job.build_key);
    return out;
  };
  EXPECT_EQ(keys(*again), keys(*first));
  EXPECT_EQ(NeedsLocks(store_, *again), digests);
  EXPECT_NE(keys(*newer)[0], keys(*first)[0]);
  EXPECT_NE(NeedsLocks(store_, *newer)[0], digests[0]);
}

}  // namespace
}  // namespace farm::builds
