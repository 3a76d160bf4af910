// Source archives: well-formed ones unpack exactly; hostile ones are refused with the rule
// and entry named, and nothing is ever written outside the destination.
#include "common/archive/source_archive.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "common/fs.h"
#include "tests/support/test_util.h"
#include "tests/unit/common/archive/tar_builder.h"

namespace farm::archives {
namespace {

namespace stdfs = std::filesystem;
using testing::TarEntrySpec;

class SourceArchiveTest : public ::testing::Test {
 protected:
  std::string Tar(const std::vector<TarEntrySpec>& entries, const std::string& filter = "") {
    std::string path = dir_.path() + "/a" + std::to_string(++count_) + ".tar";
    Status s = testing::WriteTar(path, entries, filter);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return path;
  }
  std::string Dest() { return dir_.path() + "/out" + std::to_string(count_); }

  // The archive is refused by the scan and by extraction, naming `rule` (and `entry`), and
  // extraction leaves nothing beside its destination.
  void ExpectRefused(const std::vector<TarEntrySpec>& entries, const std::string& rule,
                     const std::string& entry = "", const Limits& limits = SourceArchiveLimits()) {
    std::string path = Tar(entries);
    auto scanned = ScanSourceArchive(path, limits);
    ASSERT_FALSE(scanned.ok());
    EXPECT_EQ(scanned.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(scanned.status().message().rfind(rule + ": ", 0), 0u) << scanned.status().message();
    if (!entry.empty()) {
      EXPECT_NE(scanned.status().message().find(entry), std::string::npos)
          << scanned.status().message();
    }
    std::string dest = dir_.path() + "/box" + std::to_string(count_) + "/dest";
    auto extracted = ExtractSourceArchive(path, dest, limits);
    ASSERT_FALSE(extracted.ok());
    EXPECT_EQ(extracted.status().message(), scanned.status().message());
    for (const auto& e : stdfs::directory_iterator(stdfs::path(dest).parent_path())) {
      EXPECT_EQ(e.path().filename(), "dest") << "written beside the destination: " << e.path();
    }
  }

  farm::testing::ScopedTempDir dir_;
  int count_ = 0;
};

TEST_F(SourceArchiveTest, UnpacksFilesDirectoriesLinksAndTimes) {
  std::string path =
      Tar({{"./", "", TarEntrySpec::kDirectory, "", 0755},
           {"./pkg/", "", TarEntrySpec::kDirectory, "", 0700},
           {"./pkg/build.sh", "echo hi\n", TarEntrySpec::kFile, "", 04755, 1'600'000'000},
           {"./pkg/data.txt", "data", TarEntrySpec::kFile, "", 0600},
           {"./pkg/same.txt", "", TarEntrySpec::kHardlink, "./pkg/data.txt"},
           {"./current", "", TarEntrySpec::kSymlink, "pkg/data.txt"},
           {"./pkg/up", "", TarEntrySpec::kSymlink, ".."}},
          "gzip");
  std::string dest = Dest();
  auto listing = ExtractSourceArchive(path, dest, SourceArchiveLimits());
  ASSERT_TRUE(listing.ok()) << listing.status().ToString();
  EXPECT_EQ(listing->files, 3);
  EXPECT_EQ(listing->total_bytes, 12);
  EXPECT_EQ(listing->names, (std::vector<std::string>{"pkg/build.sh", "pkg/data.txt",
                                                      "pkg/same.txt", "current", "pkg/up"}));
  EXPECT_EQ(*fs::ReadFile(dest + "/pkg/build.sh"), "echo hi\n");
  EXPECT_EQ(*fs::ReadFile(dest + "/pkg/same.txt"), "data");
  EXPECT_EQ(*fs::ReadFile(dest + "/current"), "data");
  EXPECT_EQ(stdfs::read_symlink(dest + "/pkg/up"), "..");
  struct stat st {};
  ASSERT_EQ(::stat((dest + "/pkg/build.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);  // executable kept, setuid dropped
  EXPECT_EQ(st.st_mtim.tv_sec, 1'600'000'000);
  ASSERT_EQ(::stat((dest + "/pkg/data.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  ASSERT_EQ(::stat((dest + "/pkg").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
}

TEST_F(SourceArchiveTest, ScanHashesEveryByteOfTheFile) {
  std::string path = Tar({{"a.txt", std::string(100000, 'a')}}, "zstd");
  Sha256 raw;
  auto listing = ScanSourceArchive(path, SourceArchiveLimits(), &raw);
  ASSERT_TRUE(listing.ok()) << listing.status().ToString();
  EXPECT_EQ(raw.HexDigest(), *Sha256FileHex(path));
  EXPECT_EQ(listing->names, std::vector<std::string>{"a.txt"});
}

TEST_F(SourceArchiveTest, EmptyArchiveHasNoFiles) {
  auto listing = ScanSourceArchive(Tar({}), SourceArchiveLimits());
  ASSERT_TRUE(listing.ok()) << listing.status().ToString();
  EXPECT_EQ(listing->files, 0);
}

TEST_F(SourceArchiveTest, RefusesWhatIsNoTarArchive) {
  std::string path = dir_.path() + "/junk.tar";
  ASSERT_OK(fs::WriteFileAtomic(path, std::string(4096, '\x7f') + "not a tar"));
  auto r = ScanSourceArchive(path, SourceArchiveLimits());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a tar archive"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(ScanSourceArchive(dir_.path() + "/missing.tar", SourceArchiveLimits()).status().code(),
            StatusCode::kNotFound);
}

TEST_F(SourceArchiveTest, RefusesAbsoluteAndDotDotNames) {
  ExpectRefused({{"/etc/cron.d/evil", "x"}}, "path-absolute", "/etc/cron.d/evil");
  ExpectRefused({{"pkg/../../evil", "x"}}, "path-dotdot", "pkg/../../evil");
  ExpectRefused({{"pkg/./x", "x"}}, "path-invalid");
  ExpectRefused({{"a\\b", "x"}}, "path-invalid");
}

TEST_F(SourceArchiveTest, RefusesLinksLeavingTheTree) {
  ExpectRefused({{"evil", "", TarEntrySpec::kSymlink, "/etc/passwd"}}, "symlink", "evil");
  ExpectRefused({{"d/evil", "", TarEntrySpec::kSymlink, "../../x"}}, "symlink", "d/evil");
  // Each link stays inside when read alone; followed through "d/up" the second leaves.
  ExpectRefused({{"d/up", "", TarEntrySpec::kSymlink, ".."},
                 {"x", "", TarEntrySpec::kSymlink, "d/up/../secret"}},
                "symlink", "x");
  ExpectRefused({{"a", "", TarEntrySpec::kSymlink, "b"}, {"b", "", TarEntrySpec::kSymlink, "a/c"}},
                "symlink");
}

TEST_F(SourceArchiveTest, RefusesEntriesStoredThroughALink) {
  ExpectRefused(
      {{"d", "", TarEntrySpec::kDirectory}, {"l", "", TarEntrySpec::kSymlink, "d"}, {"l/f", "x"}},
      "path-through-link", "l/f");
}

TEST_F(SourceArchiveTest, RefusesHardLinksToNoEarlierFile) {
  ExpectRefused({{"h", "", TarEntrySpec::kHardlink, "/etc/shadow"}}, "hardlink", "h");
  ExpectRefused({{"h", "", TarEntrySpec::kHardlink, "../outside"}}, "hardlink", "h");
  ExpectRefused({{"h", "", TarEntrySpec::kHardlink, "later"}, {"later", "x"}}, "hardlink", "h");
}

TEST_F(SourceArchiveTest, RefusesSpecialFilesAndDuplicates) {
  ExpectRefused({{"fifo", "", TarEntrySpec::kFifo}}, "special-file", "fifo");
  ExpectRefused({{"a", "1"}, {"a", "2"}}, "duplicate-entry", "a");
  ExpectRefused({{"a/b", "1"}, {"a", "", TarEntrySpec::kSymlink, "c"}}, "duplicate-entry", "a");
  ExpectRefused({{"a", "1"}, {"a/b", "2"}}, "duplicate-entry", "a/b");
}

TEST_F(SourceArchiveTest, StopsAtTheLimits) {
  Limits few = SourceArchiveLimits();
  few.max_entries = 2;
  ExpectRefused({{"a", "1"}, {"b", "2"}, {"c", "3"}}, "too-many-entries", "", few);
  Limits small = SourceArchiveLimits();
  small.max_entry_bytes = 1000;
  ExpectRefused({{"big", std::string(1001, 'x')}}, "entry-too-large", "big", small);
  small.max_entry_bytes = 1000;
  small.max_total_bytes = 1500;
  ExpectRefused({{"a", std::string(1000, 'x')}, {"b", std::string(1000, 'x')}}, "total-too-large",
                "b", small);
}

TEST_F(SourceArchiveTest, StopsACompressionBomb) {
  Limits limits = SourceArchiveLimits();
  limits.ratio_grace_bytes = 64 << 10;
  limits.max_ratio = 50;
  std::string path = Tar({{"zeros", std::string(4 << 20, '\0')}}, "zstd");
  auto r = ScanSourceArchive(path, limits);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("compression-ratio: zeros: ", 0), 0u)
      << r.status().message();
}

TEST_F(SourceArchiveTest, RefusesANonEmptyDestination) {
  std::string path = Tar({{"a", "1"}});
  std::string dest = Dest();
  ASSERT_OK(fs::MakeDirs(dest));
  ASSERT_OK(fs::WriteFileAtomic(dest + "/there", "x"));
  EXPECT_EQ(ExtractSourceArchive(path, dest, SourceArchiveLimits()).status().code(),
            StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace farm::archives
