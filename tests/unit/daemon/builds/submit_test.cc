// Planning and storing a submitted build against in-memory ports: a job per cell with its
// key, reuse of a succeeded key, names checked before and claimed after, nothing stored on
// a refusal, and a graph stored required-first with its jobs held.
#include "daemon/builds/submit.h"

#include <gtest/gtest.h>

#include "daemon/builds/build_key.h"
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
  for (const store::JobRow& job : *store_.ListJobs(*again)) EXPECT_GT(job.reused_from, 0);
  farm::v1::SubmitBuildRequest forced = Request(Recipe("attn"));
  forced.set_force(true);
  auto rebuilt = submitter_.Submit(forced, alice_, nullptr);
  ASSERT_OK(rebuilt.status());
  for (const store::JobRow& job : *store_.ListJobs(*rebuilt)) EXPECT_EQ(job.reused_from, 0);
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
  for (const store::JobRow& job : *store_.ListJobs(*id)) {
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

}  // namespace
}  // namespace farm::builds
