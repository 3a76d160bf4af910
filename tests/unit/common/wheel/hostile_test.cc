// Hostile archives: every one must be rejected with the rule and entry named, without
// extracting anything and, for the size rules, without streaming past the limit.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "common/fs.h"
#include "common/wheel/inspect.h"
#include "tests/support/test_util.h"
#include "tests/unit/common/wheel/wheel_builder.h"

namespace farm::wheel {
namespace {

using testing::AllProblems;
using testing::WheelSpec;
using testing::ZipEntrySpec;

// Overwrites the uncompressed size that the local header and the central directory
// record for `name`, so the archive lies about how much the entry expands to.
Status PatchDeclaredSize(const std::string& path, const std::string& name, uint32_t size) {
  FARM_ASSIGN_OR_RETURN(std::string zip, fs::ReadFile(path));
  int patched = 0;
  for (size_t pos = 0; pos + 46 < zip.size(); ++pos) {
    bool local = zip.compare(pos, 4, "PK\x03\x04") == 0;
    bool central = zip.compare(pos, 4, "PK\x01\x02") == 0;
    if (!local && !central) continue;
    size_t name_at = pos + (local ? 30 : 46);
    uint16_t name_len;
    std::memcpy(&name_len, zip.data() + pos + (local ? 26 : 28), 2);
    if (name_len != name.size() || zip.compare(name_at, name.size(), name) != 0) continue;
    std::memcpy(zip.data() + pos + (local ? 22 : 24), &size, 4);
    ++patched;
  }
  if (patched != 2) return Status::Internal("patched " + std::to_string(patched) + " headers");
  return fs::WriteFileAtomic(path, zip);
}

class HostileTest : public ::testing::Test {
 protected:
  WheelReport InspectWith(const std::vector<ZipEntrySpec>& unlisted,
                          const InspectOptions& options = {}) {
    WheelSpec spec;
    spec.unlisted = unlisted;
    Result<std::string> path = testing::WriteWheel(dir_.path(), spec);
    EXPECT_TRUE(path.ok()) << path.status().ToString();
    path_ = path.ok() ? *path : "";
    return Reinspect(options);
  }
  WheelReport Reinspect(const InspectOptions& options = {}) {
    Result<WheelReport> r = InspectWheel(path_, options);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : WheelReport{};
  }
  // The entry is rejected under `rule` and not handed on as a file.
  void ExpectRejected(const WheelReport& r, const std::string& rule, const std::string& entry) {
    EXPECT_TRUE(HasProblem(r.problems, rule, entry)) << AllProblems(r);
    for (const WheelFileInfo& f : r.files) EXPECT_NE(f.name, entry);
  }

  farm::testing::ScopedTempDir dir_;
  std::string path_;
};

TEST_F(HostileTest, AbsolutePath) {
  WheelReport r = InspectWith({{"/etc/cron.d/evil", "* * * * * root id\n"}});
  ExpectRejected(r, "path-absolute", "/etc/cron.d/evil");
  ASSERT_EQ(r.problems.size(), 1u) << AllProblems(r);
}

TEST_F(HostileTest, DotDotComponent) {
  WheelReport r = InspectWith({{"attn_example/../../evil.py", "x"}});
  ExpectRejected(r, "path-dotdot", "attn_example/../../evil.py");
  ASSERT_EQ(r.problems.size(), 1u) << AllProblems(r);
}

TEST_F(HostileTest, BackslashTraversal) {
  // libarchive turns '\\' into '/' in names without the UTF-8 flag, so a Windows-style
  // traversal is caught by the '..' rule under its normalised name.
  WheelReport r = InspectWith({{"attn_example\\..\\..\\evil.py", "x"}});
  ExpectRejected(r, "path-dotdot", "attn_example/../../evil.py");
  ASSERT_EQ(r.problems.size(), 1u) << AllProblems(r);
}

TEST_F(HostileTest, OtherBadNames) {
  WheelReport r = InspectWith({{"attn_example//x.py", "x"}, {"attn_example/./y.py", "x"}});
  ExpectRejected(r, "path-invalid", "attn_example//x.py");
  ExpectRejected(r, "path-invalid", "attn_example/./y.py");
}

TEST_F(HostileTest, SymlinkOutOfTreeAndInTree) {
  ZipEntrySpec out{"attn_example/passwd", "", ZipEntrySpec::Type::kSymlink, "../../etc/passwd"};
  ZipEntrySpec in{"attn_example/alias.py", "", ZipEntrySpec::Type::kSymlink, "_version.py"};
  WheelReport r = InspectWith({out, in});
  ExpectRejected(r, "symlink", "attn_example/passwd");
  ExpectRejected(r, "symlink", "attn_example/alias.py");
  ASSERT_EQ(r.problems.size(), 2u) << AllProblems(r);
  EXPECT_NE(r.problems[0].detail.find("points out of the wheel"), std::string::npos)
      << r.problems[0].detail;
  EXPECT_EQ(r.problems[1].detail.find("points out of the wheel"), std::string::npos);
}

TEST_F(HostileTest, DuplicateNames) {
  WheelReport r = InspectWith({{"attn_example/__init__.py", "import os; os.system('id')\n"}});
  ASSERT_EQ(r.problems.size(), 1u) << AllProblems(r);
  EXPECT_EQ(r.problems[0].rule, "duplicate-entry");
  EXPECT_EQ(r.problems[0].entry, "attn_example/__init__.py");
}

TEST_F(HostileTest, EntryLargerThanLimitByDeclaredSize) {
  InspectOptions options;
  options.limits.max_entry_bytes = 1 << 20;
  WheelReport r = InspectWith({{"attn_example/big.bin", std::string(2 << 20, 'z')}}, options);
  EXPECT_TRUE(HasProblem(r.problems, "entry-too-large", "attn_example/big.bin")) << AllProblems(r);
  EXPECT_TRUE(r.scan_aborted);
  EXPECT_LE(r.total_bytes, 1 << 20);
}

TEST_F(HostileTest, EntryLargerThanLimitWhileHeadersLie) {
  InspectOptions options;
  options.limits.max_entry_bytes = 1 << 20;
  InspectWith({{"attn_example/big.bin", std::string(8 << 20, 'z')}}, options);
  ASSERT_OK(PatchDeclaredSize(path_, "attn_example/big.bin", 100));
  WheelReport r = Reinspect(options);
  EXPECT_TRUE(HasProblem(r.problems, "entry-too-large", "attn_example/big.bin")) << AllProblems(r);
  EXPECT_TRUE(r.scan_aborted);
  // Counting stopped at the limit (plus at most one 64 KiB read and the small files before
  // it): nothing near the real 8 MiB was produced.
  EXPECT_LE(r.total_bytes, (1 << 20) + (128 << 10));
}

TEST_F(HostileTest, TotalLargerThanLimit) {
  InspectOptions options;
  options.limits.max_total_bytes = 1 << 20;
  WheelReport r = InspectWith({{"attn_example/a.bin", std::string(600 << 10, 'a')},
                               {"attn_example/b.bin", std::string(600 << 10, 'b')}},
                              options);
  EXPECT_TRUE(HasProblem(r.problems, "total-too-large", "attn_example/b.bin")) << AllProblems(r);
  EXPECT_TRUE(r.scan_aborted);
}

TEST_F(HostileTest, CompressionRatioBombStopsEarly) {
  constexpr int64_t kBomb = int64_t{64} << 20;
  WheelReport r = InspectWith({{"attn_example/zeros.bin", std::string(kBomb, '\0')}});
  EXPECT_TRUE(HasProblem(r.problems, "compression-ratio", "attn_example/zeros.bin"))
      << AllProblems(r);
  EXPECT_TRUE(r.scan_aborted);
  EXPECT_LT(r.total_bytes, kBomb / 2);
  ASSERT_OK(PatchDeclaredSize(path_, "attn_example/zeros.bin", 10));
  WheelReport lied = Reinspect();
  EXPECT_TRUE(HasProblem(lied.problems, "compression-ratio", "attn_example/zeros.bin"))
      << AllProblems(lied);
}

std::string Noise(size_t bytes, bool hex_text) {
  std::mt19937_64 rng(7);
  std::string out(bytes, '\0');
  for (char& c : out) {
    uint64_t v = rng();
    c = hex_text ? "0123456789abcdef"[v & 15] : static_cast<char>(v);
  }
  return out;
}

TEST_F(HostileTest, BombHiddenAmongIncompressibleData) {
  // The archive as a whole expands only ~5x; the zero-filled entry alone ~1000x.
  WheelReport r = InspectWith({{"attn_example/noise.bin", Noise(8 << 20, false)},
                               {"attn_example/zeros.bin", std::string(32 << 20, '\0')}});
  EXPECT_TRUE(HasProblem(r.problems, "compression-ratio", "attn_example/zeros.bin"))
      << AllProblems(r);
  EXPECT_LT(r.total_bytes, (8 << 20) + (16 << 20));
  ASSERT_FALSE(r.problems.empty());
  EXPECT_NE(r.problems.back().detail.find("compressed bytes"), std::string::npos)
      << r.problems.back().detail;
}

TEST_F(HostileTest, LargeOrdinaryEntriesPass) {
  WheelSpec spec;
  spec.files.push_back({"attn_example/table.txt", Noise(24 << 20, true)});
  spec.files.push_back({"attn_example/blob.bin", Noise(8 << 20, false)});
  Result<std::string> path = testing::WriteWheel(dir_.path(), spec);
  ASSERT_OK(path.status());
  Result<WheelReport> r = InspectWheel(*path, {});
  ASSERT_OK(r.status());
  EXPECT_TRUE(r->ok()) << AllProblems(*r);
  int64_t sum = 0;
  for (const WheelFileInfo& f : r->files) sum += f.size;
  EXPECT_EQ(r->total_bytes, sum);
  EXPECT_GT(sum, 32 << 20);
}

TEST_F(HostileTest, TooManyEntries) {
  InspectOptions options;
  options.limits.max_entries = 5;
  std::vector<ZipEntrySpec> many;
  for (int i = 0; i < 20; ++i) many.push_back({"attn_example/f" + std::to_string(i), "x"});
  WheelReport r = InspectWith(many, options);
  EXPECT_TRUE(HasProblem(r.problems, "too-many-entries")) << AllProblems(r);
  EXPECT_TRUE(r.scan_aborted);
  EXPECT_LE(r.files.size(), 5u);
}

}  // namespace
}  // namespace farm::wheel
