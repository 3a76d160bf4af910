// Signed provenance in the store (migration 018): one row per (wheel, kind, job, attempt),
// builds listed first, re-signing in place, and the Hub files a folder's SHA256SUMS lists.
#include <gtest/gtest.h>

#include "daemon/store/store.h"
#include "tests/support/test_util.h"
#include "tests/unit/daemon/store/store_under_test.h"

namespace farm::store {
namespace {

class ProvenanceStoreTest : public StoreTest {
 protected:
  ProvenanceRow Row(const std::string& kind, int64_t job, int attempt, const std::string& key) {
    return {.sha256 = std::string(64, 'a'),
            .kind = kind,
            .job_id = job,
            .attempt = attempt,
            .keyid = key,
            .envelope = "{\"kind\":\"" + kind + "\"}",
            .created_ms = 5};
  }
};

TEST_F(ProvenanceStoreTest, OneRowPerWheelKindJobAndAttemptBuildsFirst) {
  ASSERT_TRUE(store_->InsertProvenance(Row("validation", 7, 1, "k1")).value());
  ASSERT_TRUE(store_->InsertProvenance(Row("build", 7, 1, "k1")).value());
  EXPECT_FALSE(store_->InsertProvenance(Row("build", 7, 1, "k2")).value()) << "signed twice";
  ASSERT_TRUE(store_->InsertProvenance(Row("validation", 9, 1, "k1")).value());
  auto rows = store_->ListProvenance(std::string(64, 'a'), 10);
  ASSERT_OK(rows.status());
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[0].kind, "build");
  EXPECT_EQ((*rows)[0].keyid, "k1");
  EXPECT_EQ((*rows)[1].job_id, 7);
  EXPECT_EQ((*rows)[2].job_id, 9);
  EXPECT_EQ((*rows)[1].envelope, "{\"kind\":\"validation\"}");
  EXPECT_EQ(store_->ListProvenance(std::string(64, 'a'), 1)->size(), 1u);
  EXPECT_TRUE(store_->ListProvenance(std::string(64, 'b'), 10)->empty());
}

TEST_F(ProvenanceStoreTest, RowsOfAKeyAreResignedInPlace) {
  ASSERT_OK(store_->InsertProvenance(Row("build", 7, 1, "old")).status());
  ASSERT_OK(store_->InsertProvenance(Row("validation", 7, 1, "old")).status());
  ASSERT_OK(store_->InsertProvenance(Row("validation", 8, 1, "other")).status());
  auto old = store_->ListProvenanceSignedBy("old", 0, 10);
  ASSERT_OK(old.status());
  ASSERT_EQ(old->size(), 2u);
  EXPECT_EQ(store_->ListProvenanceSignedBy("old", (*old)[0].id, 10)->size(), 1u);
  for (const auto& r : *old) ASSERT_OK(store_->ResignProvenance(r.id, "new", "{\"re\":1}"));
  EXPECT_TRUE(store_->ListProvenanceSignedBy("old", 0, 10)->empty());
  auto rows = store_->ListProvenance(std::string(64, 'a'), 10).value();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].keyid, "new");
  EXPECT_EQ(rows[0].envelope, "{\"re\":1}");
  EXPECT_EQ(rows[2].keyid, "other");
  EXPECT_EQ(store_->ResignProvenance(999, "k", "e").code(), StatusCode::kNotFound);
}

TEST_F(ProvenanceStoreTest, HubFilesUnderAFolderAreTheUploadedOnes) {
  BuildRow b{.recipe_name = "r", .recipe = "r", .submitted_by = "t", .created_ms = 1};
  std::vector<JobRow> jobs(1);
  ASSERT_OK(store_->CreateBuild(&b, &jobs));
  auto hf = [&](int64_t artifact, const std::string& path) {
    return PublicationRow{.build_id = b.id,
                          .artifact_id = artifact,
                          .target = "hf",
                          .kind = "file",
                          .repo = "o/r",
                          .path = path,
                          .filename = path.substr(path.rfind('/') + 1),
                          .sha256 = std::string(64, static_cast<char>('a' + artifact))};
  };
  ASSERT_OK(store_->EnqueuePublications(1, "queued", {hf(1, "build/cu130/x.whl")}, 1));
  ASSERT_OK(store_->EnqueuePublications(2, "queued", {hf(2, "build/cu130/y.whl")}, 1));
  ASSERT_OK(store_->EnqueuePublications(3, "queued", {hf(3, "build/cu128/z.whl")}, 1));
  ASSERT_OK(store_->EnqueuePublications(4, "queued", {hf(4, "build/cu130_x.whl")}, 1));
  auto rows = store_->ListPublications(b.id).value();
  for (auto& r : rows) {
    if (r.artifact_id == 2) continue;  // still pending: not on the Hub yet
    r.state = store::PublicationState::kUploaded;
    ASSERT_OK(store_->UpdatePublication(r, 2));
  }
  auto under = store_->ListHubFilesUnder("o/r", "", "build/cu130/");
  ASSERT_OK(under.status());
  ASSERT_EQ(under->size(), 1u);
  EXPECT_EQ((*under)[0].path, "build/cu130/x.whl");
  EXPECT_EQ(store_->ListHubFilesUnder("o/r", "", "build/")->size(), 3u);
  EXPECT_TRUE(store_->ListHubFilesUnder("o/other", "", "build/")->empty());
}

}  // namespace
}  // namespace farm::store
