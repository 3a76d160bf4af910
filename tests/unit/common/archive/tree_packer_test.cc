// Packing a tree: deterministic bytes, .gitignore files (the work tree's too), excludes,
// limits, and a round trip through the worker's unpacking.
#include "common/archive/tree_packer.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <utime.h>

#include <filesystem>

#include "common/archive/source_archive.h"
#include "common/fs.h"
#include "common/sha256.h"
#include "tests/support/test_util.h"

namespace farm::archives {
namespace {

namespace stdfs = std::filesystem;

class TreePackerTest : public ::testing::Test {
 protected:
  void Write(const std::string& rel, const std::string& content, int64_t mtime = 1'650'000'000) {
    std::string path = root() + "/" + rel;
    ASSERT_OK(fs::MakeDirs(stdfs::path(path).parent_path().string()));
    ASSERT_OK(fs::WriteFileAtomic(path, content));
    struct utimbuf times {
      mtime, mtime
    };
    ASSERT_EQ(::utime(path.c_str(), &times), 0);
  }
  std::string root() const { return dir_.path() + "/tree"; }

  Result<std::string> Pack(const std::string& dir, const PackOptions& options = {}) {
    FARM_ASSIGN_OR_RETURN(TreePlan plan, PlanTree(dir, options));
    std::string bytes;
    FARM_RETURN_IF_ERROR(WriteTreeArchive(plan, [&](std::string_view piece) {
      bytes.append(piece);
      return Status::Ok();
    }));
    return bytes;
  }
  std::vector<std::string> Names(const std::string& dir, const PackOptions& options = {}) {
    auto plan = PlanTree(dir, options);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    std::vector<std::string> names;
    if (plan.ok()) {
      for (const TreeEntry& e : plan->entries) names.push_back(e.path);
    }
    return names;
  }

  farm::testing::ScopedTempDir dir_;
};

TEST_F(TreePackerTest, TheSameTreeGivesTheSameBytes) {
  Write("setup.py", "from setuptools import setup\n");
  Write("pkg/__init__.py", "");
  Write("pkg/kernel.cu", std::string(300000, 'k'));
  auto first = Pack(root());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = Pack(root());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(Sha256Hex(*first), Sha256Hex(*second));
  EXPECT_LT(first->size(), 10000u);  // zstd

  Write("pkg/kernel.cu", std::string(300000, 'k'), 1'650'000'001);  // only the time changed
  auto touched = Pack(root());
  ASSERT_TRUE(touched.ok());
  EXPECT_NE(Sha256Hex(*first), Sha256Hex(*touched));
  Write("pkg/kernel.cu", std::string(299999, 'k') + "x", 1'650'000'000);
  auto edited = Pack(root());
  ASSERT_TRUE(edited.ok());
  EXPECT_NE(Sha256Hex(*first), Sha256Hex(*edited));
}

TEST_F(TreePackerTest, RoundTripThroughTheWorkersUnpacking) {
  std::string long_name = "deep/" + std::string(150, 'n') + "/file.txt";
  Write(long_name, "long");
  Write("unicodé/ß.txt", "utf8");
  Write("run.sh", "#!/bin/sh\n");
  ASSERT_EQ(::chmod((root() + "/run.sh").c_str(), 0700), 0);
  ASSERT_OK(fs::MakeDirs(root() + "/empty"));
  stdfs::create_symlink("run.sh", root() + "/link");
  auto bytes = Pack(root());
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto again = Pack(root());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *bytes);  // long and non-ASCII names too
  std::string archive = dir_.path() + "/tree.tar.zst";
  ASSERT_OK(fs::WriteFileAtomic(archive, *bytes));
  std::string dest = dir_.path() + "/unpacked";
  auto listing = ExtractSourceArchive(archive, dest, SourceArchiveLimits());
  ASSERT_TRUE(listing.ok()) << listing.status().ToString();
  EXPECT_EQ(*fs::ReadFile(dest + "/" + long_name), "long");
  EXPECT_EQ(*fs::ReadFile(dest + "/unicodé/ß.txt"), "utf8");
  EXPECT_EQ(stdfs::read_symlink(dest + "/link"), "run.sh");
  EXPECT_TRUE(stdfs::is_directory(dest + "/empty"));
  struct stat st {};
  ASSERT_EQ(::stat((dest + "/run.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  ASSERT_EQ(::stat((dest + "/unicodé/ß.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mtim.tv_sec, 1'650'000'000);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST_F(TreePackerTest, HonoursGitignoreFilesExcludesAndLeavesGitOut) {
  Write("keep.py", "");
  Write("build/out.o", "");
  Write("notes.log", "");
  Write("important.log", "");
  Write(".gitignore", "/build/\n*.log\n!important.log\n");
  Write("sub/.gitignore", "generated.h\n");
  Write("sub/generated.h", "");
  Write("sub/real.h", "");
  Write("data/huge.bin", "");
  Write(".git/HEAD", "ref: refs/heads/main\n");
  PackOptions options;
  options.excludes = {"/data"};
  EXPECT_EQ(Names(root(), options),
            (std::vector<std::string>{".gitignore", "important.log", "keep.py", "sub",
                                      "sub/.gitignore", "sub/real.h"}));
  options.gitignore = false;
  EXPECT_EQ(Names(root(), options).size(), 10u);  // everything but .git and data
}

TEST_F(TreePackerTest, ReadsTheGitignoreFilesAboveTheTreeInsideItsWorkTree) {
  Write(".git/HEAD", "ref: refs/heads/main\n");
  Write(".gitignore", "/kernels/*/build/\n__pycache__/\n");
  Write("kernels/.gitignore", "*.tmp\n");
  Write("kernels/example/setup.py", "");
  Write("kernels/example/build/lib.so", "");
  Write("kernels/example/__pycache__/x.pyc", "");
  Write("kernels/example/scratch.tmp", "");
  EXPECT_EQ(Names(root() + "/kernels/example"), std::vector<std::string>{"setup.py"});
}

TEST_F(TreePackerTest, RefusesATreeOverTheLimitNamingWhatIsLarge) {
  Write("src/a.c", std::string(1000, 'a'));
  Write("weights/w.bin", std::string(100000, 'w'));
  PackOptions options;
  options.max_bytes = 50000;
  auto plan = PlanTree(root(), options);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kResourceExhausted);
  std::string m = plan.status().message();
  EXPECT_NE(m.find("largest: weights "), std::string::npos) << m;
  EXPECT_NE(m.find("--exclude"), std::string::npos) << m;
}

TEST_F(TreePackerTest, RefusesLinksOutOfTheTreeAndMissingDirectories) {
  Write("a.txt", "");
  stdfs::create_symlink("/etc/passwd", root() + "/passwd");
  auto plan = PlanTree(root(), {});
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("passwd"), std::string::npos);
  EXPECT_EQ(PlanTree(dir_.path() + "/nope", {}).status().code(), StatusCode::kNotFound);
}

TEST_F(TreePackerTest, NoticesAFileThatChangedWhilePacking) {
  Write("a.txt", "short");
  auto plan = PlanTree(root(), {});
  ASSERT_TRUE(plan.ok());
  Write("a.txt", "much longer now");
  Status s = WriteTreeArchive(*plan, [](std::string_view) { return Status::Ok(); });
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
}

TEST_F(TreePackerTest, ASinkErrorStopsThePacking) {
  Write("a.bin", std::string(3 << 20, 'x'));
  Write("b.bin", RandomHex(2 << 20));
  auto plan = PlanTree(root(), {});
  ASSERT_TRUE(plan.ok());
  int calls = 0;
  Status s = WriteTreeArchive(*plan, [&](std::string_view) {
    return ++calls == 1 ? Status::Unavailable("link down") : Status::Ok();
  });
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace farm::archives
