// The requests use case against in-memory ports: a new request decided by its filer
// (refused with the reason, answered with a stored wheel, or built once by the recipe's
// owner), identical requests merged into one build, hostile and anonymous filings refused
// with nothing stored, an anonymous request waiting for an admin, and a request following
// its job to built or failed.
#include "daemon/requests/requests.h"

#include <gtest/gtest.h>

#include <map>

#include "common/recipe/recipe.h"
#include "daemon/builds/build_key.h"
#include "daemon/store/job_state.h"
#include "tests/support/test_util.h"
#include "tests/unit/daemon/builds/in_memory_store.h"

namespace farm::requests {
namespace {

// Rows by key, the merge and the compare-and-set as the SQL store gives them.
class InMemoryRequestStore final : public store::RequestStore {
 public:
  std::map<int64_t, store::RequestRow> rows;
  std::vector<store::RequestFiling> filings;

  Result<std::pair<store::RequestRow, bool>> FileRequest(const store::RequestRow& row,
                                                         const store::RequestFiling& filing,
                                                         const store::FilingLimit& limit) override {
    int64_t used = 0;
    for (const auto& f : filings) {
      bool same = filing.principal.empty() ? f.principal.empty() && f.address == filing.address
                                           : f.principal == filing.principal;
      used += same && f.created_ms >= limit.since_ms;
    }
    if (limit.max >= 0 && used >= limit.max) return Status::ResourceExhausted("over the limit");
    for (auto& [id, r] : rows) {
      if (r.key != row.key) continue;
      r.filings += 1;
      filings.push_back(filing);
      return std::make_pair(r, false);
    }
    store::RequestRow made = row;
    made.id = static_cast<int64_t>(rows.size()) + 1;
    made.filings = 1;
    made.created_ms = made.updated_ms = filing.created_ms;
    rows[made.id] = made;
    filings.push_back(filing);
    return std::make_pair(made, true);
  }
  Result<bool> MoveRequest(int from_state, const store::RequestRow& to) override {
    auto it = rows.find(to.id);
    if (it == rows.end() || it->second.state != from_state) return false;
    store::RequestRow& r = it->second;
    r.state = to.state, r.reason = to.reason, r.decided_by = to.decided_by;
    r.recipe_name = to.recipe_name, r.arch_list = to.arch_list, r.build_id = to.build_id;
    r.job_id = to.job_id, r.wheel = to.wheel, r.updated_ms = to.updated_ms;
    return true;
  }
  Result<store::RequestRow> GetRequest(int64_t id) override {
    auto it = rows.find(id);
    if (it == rows.end()) return Status::NotFound("no request");
    return it->second;
  }
  Result<std::vector<store::RequestRow>> ListRequests(int, int64_t, int) override {
    std::vector<store::RequestRow> out;
    for (auto it = rows.rbegin(); it != rows.rend(); ++it) out.push_back(it->second);
    return out;
  }
  Result<std::vector<store::RequestFiling>> ListRequestFilings(int64_t, int) override {
    return filings;
  }
};

constexpr char kRecipe[] =
    "name: attn\nversion: \"1.0\"\n"
    "source:\n  git: {url: \"https://example.invalid/attn.git\", commit: "
    "\"0123456789abcdef0123456789abcdef01234567\"}\n"
    "build: |\n  echo build\nmatrix:\n  python: [\"3.11\"]\n  cuda: [\"12.8\"]\n"
    "  arch_lists: [\"8.9\", \"9.0\"]\n";

class RequestsTest : public ::testing::Test {
 protected:
  RequestsTest()
      : submitter_(builds::SubmitDeps{.plan = {.builds = &store_,
                                               .sources = {.sources = &store_, .clock = &clock_},
                                               .clock = &clock_},
                                      .control = &store_,
                                      .names = &store_,
                                      .inputs_key = builds::KeyWithInputs}) {}

  Requests Make(Settings settings = {}) {
    return Requests(
        RequestDeps{.requests = &requests_,
                    .builds = &store_,
                    .names = &store_,
                    .submitter = &submitter_,
                    .principal_named = [](const std::string& name) -> Result<auth::Principal> {
                      return auth::Principal{name, "submitter", ""};
                    },
                    .clock = &clock_,
                    .settings = settings});
  }

  // A past build of the recipe by its owner, alice, as the store keeps it.
  void KnowRecipe() {
    auto recipe = recipe::ParseRecipe(kRecipe, "attn.yaml");
    ASSERT_TRUE(recipe.ok()) << recipe.status().ToString();
    store_.builds[100] = store::BuildRow{.id = 100,
                                         .recipe_name = "attn",
                                         .recipe = recipe->SerializeAsString(),
                                         .submitted_by = "alice",
                                         .created_ms = 1};
    store_.names["attn"] = store::RecipeNameRow{.name = "attn", .owner = "alice"};
  }

  static Spec Want(const std::string& cc = "9.0") {
    return Spec{.package = "attn",
                .python = "3.11",
                .torch = "",
                .cuda = "12.8",
                .compute_capability = cc,
                .platform = "linux_x86_64"};
  }

  static State StateOfRow(const store::RequestRow& r) { return static_cast<State>(r.state); }

  const auth::Principal bob_{"bob", "viewer", ""};
  const auth::Principal admin_{"root", "admin", ""};
  builds::testing::InMemoryStore store_;
  InMemoryRequestStore requests_;
  farm::testing::FakeClock clock_;
  builds::Submitter submitter_;
};

TEST_F(RequestsTest, NoRecipeIsRefusedAtOnceWithTheReason) {
  Requests r = Make();
  auto filed = r.File({.who = bob_}, Want());
  ASSERT_TRUE(filed.ok()) << filed.status().ToString();
  EXPECT_EQ(StateOfRow(filed->row), State::kRefused);
  EXPECT_EQ(filed->row.reason, "no recipe on this farm builds attn");
  EXPECT_TRUE(store_.links.empty());
  // The farm learns the recipe: the same request is matched again and built.
  KnowRecipe();
  auto again = r.File({.who = bob_}, Want());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->merged);
  EXPECT_EQ(StateOfRow(again->row), State::kBuilding);
}

TEST_F(RequestsTest, BuildsTheOneCellOnceByTheOwnerAndMergesIdenticalRequests) {
  KnowRecipe();
  Requests r = Make();
  auto first = r.File({.who = bob_}, Want());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->merged);
  EXPECT_EQ(StateOfRow(first->row), State::kBuilding);
  EXPECT_EQ(first->row.arch_list, "9.0");
  ASSERT_EQ(store_.links.size(), 1u);
  const store::BuildRow& build = store_.builds.rbegin()->second;
  EXPECT_EQ(build.submitted_by, "alice");
  EXPECT_EQ(store_.ListJobs(build.id)->size(), 1u);
  for (int i = 0; i < 5; ++i) {
    auto same = r.File({.who = auth::Principal{"carol" + std::to_string(i), "viewer", ""}}, Want());
    ASSERT_TRUE(same.ok());
    EXPECT_TRUE(same->merged);
    EXPECT_EQ(same->row.id, first->row.id);
  }
  EXPECT_EQ(store_.links.size(), 1u);  // one build
  EXPECT_EQ(requests_.rows.size(), 1u);
  EXPECT_EQ(requests_.rows.begin()->second.filings, 6);

  // The job succeeds: reading the request records it built, with the wheel.
  store::JobRow& job = store_.jobs[first->row.job_id];
  job.state = store::kJobSucceeded;
  store_.AddArtifact(job.id, 1, std::string(64, 'a'));
  auto read = r.Get(first->row.id);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(StateOfRow(*read), State::kBuilt);
  EXPECT_EQ(read->wheel, "attn-1.0-py3-none-any.whl");
}

TEST_F(RequestsTest, AFailedBuildFailsTheRequest) {
  KnowRecipe();
  Requests r = Make();
  auto filed = r.File({.who = bob_}, Want());
  ASSERT_TRUE(filed.ok());
  store_.jobs[filed->row.job_id].state = store::kJobFailed;
  auto read = r.Get(filed->row.id);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(StateOfRow(*read), State::kFailed);
  EXPECT_NE(read->reason.find("the build failed"), std::string::npos);
}

TEST_F(RequestsTest, HostileFieldsAndOverQuotaFilingsStoreNothing) {
  KnowRecipe();
  Requests r = Make({.per_principal = 2});
  Spec bad = Want();
  bad.platform = "linux_x86_64; rm -rf /";
  EXPECT_EQ(r.File({.who = bob_}, bad).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(requests_.rows.empty());
  EXPECT_TRUE(r.File({.who = bob_}, Want("9.0")).ok());
  EXPECT_TRUE(r.File({.who = bob_}, Want("8.9")).ok());
  EXPECT_EQ(r.File({.who = bob_}, Want("12.0")).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(requests_.rows.size(), 2u);
  // The window passes: bob may file again. Admins are not limited.
  clock_.Advance(3600 * 1000 + 1);
  EXPECT_TRUE(r.File({.who = bob_}, Want("12.0")).ok());
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(r.File({.who = admin_}, Want()).ok());
}

TEST_F(RequestsTest, AnonymousRequestsAreOffByDefaultThenLimitedAndWaitForAnAdmin) {
  KnowRecipe();
  Requests off = Make();
  EXPECT_EQ(off.File({.address = "127.0.0.9"}, Want()).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_TRUE(requests_.rows.empty());
  Requests r = Make({.anonymous_per_address = 2});
  auto waiting = r.File({.address = "127.0.0.9"}, Want());
  ASSERT_TRUE(waiting.ok()) << waiting.status().ToString();
  EXPECT_EQ(StateOfRow(waiting->row), State::kRequested);
  EXPECT_EQ(waiting->row.recipe_name, "attn");
  EXPECT_TRUE(r.File({.address = "127.0.0.9"}, Want("8.9")).ok());
  EXPECT_EQ(r.File({.address = "127.0.0.9"}, Want("12.0")).status().code(),
            StatusCode::kResourceExhausted);
  EXPECT_TRUE(r.File({.address = "127.0.0.10"}, Want("12.0")).ok());  // per address
  EXPECT_TRUE(store_.links.empty());  // nothing built before approval
  EXPECT_EQ(r.Approve(bob_, waiting->row.id).status().code(), StatusCode::kPermissionDenied);
  auto approved = r.Approve(admin_, waiting->row.id);
  ASSERT_TRUE(approved.ok()) << approved.status().ToString();
  EXPECT_EQ(StateOfRow(*approved), State::kBuilding);
  EXPECT_EQ(store_.links.size(), 1u);
  EXPECT_EQ(r.Approve(admin_, waiting->row.id).status().code(), StatusCode::kFailedPrecondition);
  // An admin refuses another with a reason; a refused request is not matched again.
  auto refused = r.Refuse(admin_, 2, "not on this farm");
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(StateOfRow(*refused), State::kRefused);
  EXPECT_EQ(refused->decided_by, "root");
  auto again = r.File({.who = bob_}, Want("8.9"));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(StateOfRow(again->row), State::kRefused);
  EXPECT_EQ(store_.links.size(), 1u);
}

TEST_F(RequestsTest, AClaimNobodyFinishedIsOpenedAgain) {
  KnowRecipe();
  Requests r = Make();
  auto filed = r.File({.who = bob_}, Want());
  ASSERT_TRUE(filed.ok());
  // As a farmd killed between the claim and the build leaves it.
  store::RequestRow& row = requests_.rows[filed->row.id];
  row.state = static_cast<int>(State::kApproved);
  row.build_id = row.job_id = 0;
  row.updated_ms = clock_.NowUnixMs();
  EXPECT_EQ(StateOfRow(*r.Get(row.id)), State::kApproved);  // maybe still submitting
  clock_.Advance(10 * 60 * 1000 + 1);
  EXPECT_EQ(StateOfRow(*r.Get(row.id)), State::kRequested);
  auto again = r.File({.who = bob_}, Want());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(StateOfRow(again->row), State::kBuilding);
}

TEST_F(RequestsTest, ABuiltCellIsAnsweredWithItsWheel) {
  KnowRecipe();
  Requests r = Make();
  auto first = r.File({.who = bob_}, Want());
  ASSERT_TRUE(first.ok());
  store::JobRow& job = store_.jobs[first->row.job_id];
  job.state = store::kJobSucceeded;
  store_.AddArtifact(job.id, 1, std::string(64, 'b'));
  // A different request (another Python spelling of the same cell would merge; this is a
  // new row for the same cell: a second platform the recipe has no axis for).
  Spec other = Want();
  other.platform = "linux_aarch64";
  auto answered = r.File({.who = bob_}, other);
  ASSERT_TRUE(answered.ok()) << answered.status().ToString();
  EXPECT_EQ(StateOfRow(answered->row), State::kBuilt);
  EXPECT_EQ(answered->row.job_id, job.id);
  EXPECT_EQ(answered->row.wheel, "attn-1.0-py3-none-any.whl");
  EXPECT_EQ(store_.links.size(), 1u);
}

}  // namespace
}  // namespace farm::requests
