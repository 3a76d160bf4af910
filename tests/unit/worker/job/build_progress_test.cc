#include "worker/job/build_progress.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "common/fs.h"
#include "common/process.h"
#include "tests/support/test_util.h"

namespace farm::agent {
namespace {

using Units = std::optional<std::pair<int64_t, int64_t>>;

TEST(BuildProgressTest, ReadsNinjaUnitLinesAndNothingElse) {
  EXPECT_EQ(ParseUnitsLine("[12/40] /usr/local/cuda/bin/nvcc -c attn.cu"), Units({12, 40}));
  EXPECT_EQ(ParseUnitsLine("\x1b[32m[1/3]\x1b[0m Building CUDA object"), Units({1, 3}));
  EXPECT_EQ(ParseUnitsLine("  [ 3/ 9] c++ -c x.cc"), std::nullopt);  // space after '/'
  EXPECT_EQ(ParseUnitsLine("  [ 3/9] c++ -c x.cc"), Units({3, 9}));
  EXPECT_EQ(ParseUnitsLine("[ 45%] Building CXX object"), std::nullopt);
  EXPECT_EQ(ParseUnitsLine("[5/4] more done than total"), std::nullopt);
  EXPECT_EQ(ParseUnitsLine("[0/0]"), std::nullopt);
  EXPECT_EQ(ParseUnitsLine("[1/99999999999999]"), std::nullopt);
  EXPECT_EQ(ParseUnitsLine("warning: [1/2] in the middle"), std::nullopt);
  EXPECT_EQ(ParseUnitsLine(""), std::nullopt);
  EXPECT_EQ(ParseUnitsLine("["), std::nullopt);
  EXPECT_EQ(ParseUnitsLine("[7/"), std::nullopt);
}

TEST(BuildProgressTest, AddsUpSeveralNinjaRuns) {
  BuildProgress p;
  p.Begin(0, "");
  for (const char* line : {"[1/4] a", "[2/4] b", "[4/4] link", "[1/2] second extension"}) {
    p.OnLine(line);
  }
  ProgressSnapshot s = p.Snapshot();
  EXPECT_EQ(s.units_done, 5);
  EXPECT_EQ(s.units_total, 6);
  p.OnLine("[2/2] link");
  EXPECT_EQ(p.Snapshot().units_done, 6);
  EXPECT_EQ(p.Snapshot().peak_rss_bytes, 0);  // pid 0: never sampled
}

TEST(BuildProgressTest, CountsCompilesOfTheCacheLogWithoutUnitLines) {
  farm::testing::ScopedTempDir dir;
  std::string log = dir.path() + "/ccache-stats.log";
  ASSERT_OK(fs::WriteFileAtomic(log,
                                "# a.cu\ncache_miss\n# b.cc\ndirect_cache_hit\n"
                                "# a.o\ncalled_for_link\n"));
  BuildProgress p;
  p.Begin(0, dir.path());
  ProgressSnapshot s = p.Snapshot();
  EXPECT_EQ(s.units_done, 2);  // the link is no unit
  EXPECT_EQ(s.units_total, 0);
  p.OnLine("[3/10] nvcc");  // the build's own count wins once it has one
  EXPECT_EQ(p.Snapshot().units_done, 3);
  EXPECT_EQ(p.Snapshot().units_total, 10);
  BuildProgress missing;
  missing.Begin(0, dir.path() + "/none");
  EXPECT_EQ(missing.Snapshot().units_done, 0);
  // A log the build made a link to a host file, or a FIFO, counts nothing (and never blocks).
  ASSERT_OK(fs::WriteFileAtomic(dir.path() + "/host.log", "# a.cu\ncache_miss\n"));
  ASSERT_OK(fs::MakeDirs(dir.path() + "/linked"));
  ASSERT_EQ(::symlink((dir.path() + "/host.log").c_str(),
                      (dir.path() + "/linked/ccache-stats.log").c_str()),
            0);
  BuildProgress linked;
  linked.Begin(0, dir.path() + "/linked");
  EXPECT_EQ(linked.Snapshot().units_done, 0);
  ASSERT_OK(fs::MakeDirs(dir.path() + "/fifo"));
  ASSERT_EQ(::mkfifo((dir.path() + "/fifo/ccache-stats.log").c_str(), 0644), 0);
  BuildProgress fifo;
  fifo.Begin(0, dir.path() + "/fifo");
  EXPECT_EQ(fifo.Snapshot().units_done, 0);
}

void WriteProc(const std::string& root, int pid, int ppid, int64_t hwm_kb) {
  std::string dir = root + "/" + std::to_string(pid);
  ASSERT_OK(fs::MakeDirs(dir));
  // A comm with spaces and a parenthesis, as /proc allows.
  ASSERT_OK(fs::WriteFileAtomic(
      dir + "/stat", std::to_string(pid) + " (cc1 (x) y) S " + std::to_string(ppid) + " 1 1 0"));
  ASSERT_OK(fs::WriteFileAtomic(dir + "/status", "Name:\tcc1\nVmPeak:\t999999 kB\nVmHWM:\t" +
                                                     std::to_string(hwm_kb) + " kB\n"));
}

TEST(BuildProgressTest, PeakRssIsTheLargestProcessOfTheTree) {
  farm::testing::ScopedTempDir dir;
  WriteProc(dir.path(), 100, 1, 1000);     // the build's shell
  WriteProc(dir.path(), 101, 100, 5000);   // make
  WriteProc(dir.path(), 102, 101, 90000);  // nvcc
  WriteProc(dir.path(), 200, 1, 800000);   // someone else's process
  ASSERT_OK(fs::MakeDirs(dir.path() + "/self"));
  EXPECT_EQ(TreePeakRssBytes(100, dir.path()), 90000 * 1024);
  EXPECT_EQ(TreePeakRssBytes(101, dir.path()), 90000 * 1024);
  EXPECT_EQ(TreePeakRssBytes(300, dir.path()), 0);
  EXPECT_EQ(TreePeakRssBytes(0, dir.path()), 0);
  BuildProgress p(dir.path());
  p.Begin(100, "");
  p.Sample();
  WriteProc(dir.path(), 102, 101, 10);  // nvcc ended; a small process took its pid
  p.Sample();
  EXPECT_EQ(p.Snapshot().peak_rss_bytes, 90000 * 1024);  // a peak never falls
  p.End();
  WriteProc(dir.path(), 103, 100, 990000);
  p.Sample();  // after End: no more samples
  EXPECT_EQ(p.Snapshot().peak_rss_bytes, 90000 * 1024);
}

TEST(BuildProgressTest, SamplesARealChildWhileItRuns) {
  RealProcessRunner runner;
  ProcessSpec spec;
  spec.argv = {"python3", "-c",
               "import sys, time\nb = bytearray(48 << 20)\nfor i in range(0, len(b), 4096): "
               "b[i] = 1\nprint('ready', flush=True)\ntime.sleep(30)\n"};
  auto child = runner.Start(spec);
  ASSERT_OK(child.status());
  BuildProgress p;
  p.Begin(::getpid(), "");
  // The child touches 48 MiB, then sleeps; sample until the figure shows it (bounded).
  for (int i = 0; i < 100 && p.Snapshot().peak_rss_bytes < (48 << 20); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    p.Sample();
  }
  EXPECT_GE(p.Snapshot().peak_rss_bytes, int64_t{48} << 20);
  (*child)->Kill(0);
  (*child)->Wait([](OutputStream, const std::string&) {}, 10000);
}

}  // namespace
}  // namespace farm::agent
