#include "common/wheel/metadata/requires_dist.h"

#include <filesystem>

#include "common/fs.h"
#include "common/sha256.h"
#include "common/wheel/inspect.h"
#include "common/wheel/metadata/dist_info.h"
#include "common/wheel/wheel_rewrite.h"
#include "tests/support/test_util.h"
#include "tests/unit/common/wheel/wheel_builder.h"

namespace farm::wheel {
namespace {

using testing::WheelSpec;
using testing::WriteWheel;

const PinSpec kTorch211{"torch", "==2.11.*"};

std::string Pinned(const std::string& metadata, const PinSpec& pin = kTorch211) {
  auto out = SetRequiresDist(metadata, pin);
  EXPECT_TRUE(out.ok()) << out.status().message();
  return out.ok() ? *out : "";
}

TEST(ParsePinSpecTest, AcceptsNameAndClausesOnly) {
  auto pin = ParsePinSpec("torch==2.11.*");
  ASSERT_OK(pin.status());
  EXPECT_EQ(pin->name, "torch");
  EXPECT_EQ(pin->specifier, "==2.11.*");
  EXPECT_EQ(ParsePinSpec("torch>=2.9")->ToString(), "torch>=2.9");
  EXPECT_EQ(ParsePinSpec(" torch==2.11.0,!=2.11.1 ")->specifier, "==2.11.0,!=2.11.1");
  for (const char* bad : {"", "torch", "torch[cuda]==2.11.*", "torch==2.11.*; python_version>'3'",
                          "torch @ https://example.org/t.whl", "torch== 2.11",
                          "torch==", "torch==2.11.*\nRequires-Dist: evil", "-torch==1", "torch=~2",
                          "torch==2.11,", "torch==2.11 ,>=2"}) {
    EXPECT_EQ(ParsePinSpec(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(TorchRequirementTest, PinsTheMinorOfAReleaseAndTheWholeVersionOfANightly) {
  EXPECT_EQ(TorchRequirementFor("2.11.0+cu130", false).value(), "torch==2.11.*");
  EXPECT_EQ(TorchRequirementFor("2.8.0", false).value(), "torch==2.8.*");
  EXPECT_EQ(TorchRequirementFor("2.9", false).value(), "torch==2.9.*");
  EXPECT_EQ(TorchRequirementFor("2.11.0+cu130", true).value(), "torch==2.11.0");
  EXPECT_EQ(TorchRequirementFor("2.10.0.dev20250801+cu128", false).value(),
            "torch==2.10.0.dev20250801");
  EXPECT_EQ(TorchRequirementFor("2.9.0rc1", false).value(), "torch==2.9.0rc1");
  for (const char* bad : {"", "2", "two.eleven", "2.", ".11", "2.x", "2.11.*", "2.11;rm"}) {
    EXPECT_EQ(TorchRequirementFor(bad, false).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(TorchFloorRequirement("2.9").value(), "torch>=2.9");
  EXPECT_FALSE(TorchFloorRequirement("2.9.1").ok());
  EXPECT_FALSE(TorchFloorRequirement("2").ok());
  EXPECT_FALSE(TorchFloorRequirement("2.x").ok());
}

TEST(SetRequiresDistTest, AddsTheRequirementToAMetadataWithoutAny) {
  const std::string in =
      "Metadata-Version: 2.1\nName: attn-example\nVersion: 0.1.0\n\nRequires-Dist: torch in the "
      "body is prose\n";
  EXPECT_EQ(Pinned(in),
            "Metadata-Version: 2.1\nName: attn-example\nVersion: 0.1.0\n"
            "Requires-Dist: torch==2.11.*\n\nRequires-Dist: torch in the body is prose\n");
  // No body and no final newline; CRLF line endings are kept.
  EXPECT_EQ(Pinned("Metadata-Version: 2.1\nName: a\nVersion: 1"),
            "Metadata-Version: 2.1\nName: a\nVersion: 1\nRequires-Dist: torch==2.11.*\n");
  EXPECT_EQ(Pinned("Metadata-Version: 2.1\r\nName: a\r\nVersion: 1\r\n\r\nbody\r\n"),
            "Metadata-Version: 2.1\r\nName: a\r\nVersion: 1\r\nRequires-Dist: torch==2.11.*\r\n"
            "\r\nbody\r\n");
}

TEST(SetRequiresDistTest, ReplacesAnUnpinnedTorchInPlaceAndKeepsTheOtherRequirements) {
  const std::string in =
      "Metadata-Version: 2.1\nName: sageattention\nVersion: 2.2.0\nRequires-Dist: einops\n"
      "Requires-Dist: torch\nRequires-Dist: torchvision>=0.20\nSummary: x\n\nbody\n";
  EXPECT_EQ(Pinned(in),
            "Metadata-Version: 2.1\nName: sageattention\nVersion: 2.2.0\nRequires-Dist: einops\n"
            "Requires-Dist: torch==2.11.*\nRequires-Dist: torchvision>=0.20\nSummary: x\n\nbody\n");
  // Other requirements only: the pin follows the last of them.
  EXPECT_EQ(Pinned("Metadata-Version: 2.1\nName: a\nRequires-Dist: einops\nSummary: s\n"),
            "Metadata-Version: 2.1\nName: a\nRequires-Dist: einops\nRequires-Dist: torch==2.11.*\n"
            "Summary: s\n");
}

TEST(SetRequiresDistTest, KeepsExtrasDropsEnvironmentMarkersAndLeavesExtraOnlyRows) {
  const std::string in =
      "Metadata-Version: 2.1\nName: a\nVersion: 1.0\n"
      "Requires-Dist: Torch[opt-einsum] >=2.0 ; python_version >= \"3.9\"\n"
      "Requires-Dist: numpy\n"
      "Requires-Dist: torch (<3) ; extra == 'dev'\n"
      "Requires-Dist: torch[Cuda,opt_einsum]; sys_platform == \"linux\"\n"
      "Requires-Dist: torchaudio; \"torch\" in extra\n"
      "Requires-Dist: torch-nightly\n\n";
  EXPECT_EQ(Pinned(in),
            "Metadata-Version: 2.1\nName: a\nVersion: 1.0\n"
            "Requires-Dist: torch[cuda,opt-einsum]==2.11.*\n"
            "Requires-Dist: numpy\n"
            "Requires-Dist: torch (<3) ; extra == 'dev'\n"
            "Requires-Dist: torchaudio; \"torch\" in extra\n"
            "Requires-Dist: torch-nightly\n\n");
}

TEST(SetRequiresDistTest, FoldedRowsAndDuplicatesBecomeOneAndTheEditIsIdempotent) {
  const std::string in =
      "Metadata-Version: 2.1\nName: a\nVersion: 1.0\nRequires-Dist: torch\n  >=2.0\n"
      "Requires-Dist: torch\nRequires-Dist: TORCH==2.8.*\n";
  const std::string once = Pinned(in);
  EXPECT_EQ(once, "Metadata-Version: 2.1\nName: a\nVersion: 1.0\nRequires-Dist: torch==2.11.*\n");
  EXPECT_EQ(Pinned(once), once);
  EXPECT_EQ(Pinned(once, {"torch", ">=2.9"}),
            "Metadata-Version: 2.1\nName: a\nVersion: 1.0\nRequires-Dist: torch>=2.9\n");
  auto rows = [](const std::string& m) { return FindHeaders(ParseHeaders(m), "Requires-Dist"); };
  EXPECT_EQ(RequiresDistFor(rows(in), "Torch").size(), 3u);
  EXPECT_EQ(RequiresDistFor(rows(once), "torch"), std::vector<std::string>{"torch==2.11.*"});
}

TEST(SetRequiresDistTest, RefusesHostileMetadata) {
  auto code = [](const std::string& metadata) {
    return SetRequiresDist(metadata, kTorch211).status().code();
  };
  EXPECT_EQ(code("Metadata-Version: 2.1\nName: a\xff\xfe\nVersion: 1\n"),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Metadata-Version: 2.1\nName: a\nName: torch\nVersion: 1\n"),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Metadata-Version: 2.1\nName: a\nVersion: 1\nversion: 2\n"),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Metadata-Version: 1.1\nName: a\nVersion: 1\n"), StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Metadata-Version: 2.1\nName: a\nRequires-Dist: torch[<script>]\n"),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code("Metadata-Version: 2.1\nName: a\nRequires-Dist: torch[cuda\n"),
            StatusCode::kInvalidArgument);
  std::string huge = "Metadata-Version: 2.1\nName: a\nVersion: 1\n\n";
  huge.resize(static_cast<size_t>(kMaxDistInfoBytes) + 1, 'x');
  EXPECT_EQ(code(huge), StatusCode::kInvalidArgument);
  // A body may hold anything (it is the description): it is never read as headers.
  EXPECT_TRUE(SetRequiresDist("Name: a\n\nName: b\nVersion: 1\nVersion: 2\n", kTorch211).ok());
}

WheelSpec Unpinned() {
  WheelSpec spec;
  spec.metadata =
      "Metadata-Version: 2.1\nName: attn-example\nVersion: 1.0.0+cu130\n"
      "Requires-Dist: numpy\n\nAn example.\n";
  return spec;
}

std::string MetadataOf(const std::string& wheel) {
  auto info = ReadDistInfoText(wheel);
  EXPECT_TRUE(info.ok()) << info.status().message();
  return info.ok() ? info->metadata : "";
}

TEST(PinRequirementTest, WritesTheRequirementAndAValidRecordKeepingEveryOtherFile) {
  farm::testing::ScopedTempDir dir;
  auto in = WriteWheel(dir.path(), Unpinned());
  ASSERT_OK(in.status());
  std::string out_dir = dir.path() + "/out";
  ASSERT_OK(fs::MakeDirs(out_dir));
  auto pinned = PinRequirement(*in, "torch==2.11.*", out_dir);
  ASSERT_OK(pinned.status());
  EXPECT_TRUE(pinned->rewritten);
  EXPECT_EQ(pinned->filename, "attn_example-1.0.0+cu130-cp312-cp312-linux_x86_64.whl");
  EXPECT_EQ(pinned->path, out_dir + "/" + pinned->filename);
  EXPECT_EQ(pinned->requirement, "torch==2.11.*");
  EXPECT_EQ(MetadataOf(pinned->path),
            "Metadata-Version: 2.1\nName: attn-example\nVersion: 1.0.0+cu130\n"
            "Requires-Dist: numpy\nRequires-Dist: torch==2.11.*\n\nAn example.\n");
  auto report = InspectWheel(pinned->path, {});
  ASSERT_OK(report.status());
  for (const auto& p : report->problems) ADD_FAILURE() << p.ToString();
  auto original = InspectWheel(*in, {});
  ASSERT_OK(original.status());
  ASSERT_EQ(original->files.size(), report->files.size());
  for (size_t i = 0; i < report->files.size(); ++i) {
    EXPECT_EQ(original->files[i].name, report->files[i].name);
    if (!report->files[i].name.ends_with("/METADATA") &&
        !report->files[i].name.ends_with("/RECORD")) {
      EXPECT_EQ(original->files[i].sha256, report->files[i].sha256) << report->files[i].name;
    }
  }
  // Deterministic: the same edit again (after a crash, say) gives the same bytes.
  ASSERT_OK(fs::MakeDirs(dir.path() + "/again"));
  auto again = PinRequirement(*in, "torch==2.11.*", dir.path() + "/again");
  ASSERT_OK(again.status());
  EXPECT_EQ(Sha256FileHex(again->path).value(), Sha256FileHex(pinned->path).value());
  // Pinned already: nothing to write.
  auto same = PinRequirement(pinned->path, "torch==2.11.*", out_dir);
  ASSERT_OK(same.status());
  EXPECT_FALSE(same->rewritten);
  EXPECT_EQ(same->path, pinned->path);
}

TEST(PinRequirementTest, ReplacesTheWheelInItsOwnDirectory) {
  farm::testing::ScopedTempDir dir;
  auto in = WriteWheel(dir.path(), Unpinned());
  ASSERT_OK(in.status());
  auto pinned = PinRequirement(*in, "torch>=2.9", dir.path());
  ASSERT_OK(pinned.status());
  EXPECT_EQ(pinned->path, *in);
  EXPECT_NE(MetadataOf(*in).find("Requires-Dist: torch>=2.9\n"), std::string::npos);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    files += e.is_regular_file();
  EXPECT_EQ(files, 1);  // no temporary file left
  auto report = InspectWheel(*in, {});
  ASSERT_OK(report.status());
  EXPECT_TRUE(report->ok()) << report->problems[0].ToString();
}

// A RECORD is written by the build: rows naming paths outside the wheel are refused and
// nothing is written.
TEST(PinRequirementTest, RefusesRecordsNamingPathsOutsideTheWheel) {
  for (std::string row : {"../../etc/cron.d/evil,sha256=AAAA,4", "/etc/passwd,,",
                          "attn_example/..\\..\\x.py,,", "attn_example/../../up.py,,"}) {
    farm::testing::ScopedTempDir dir;
    WheelSpec spec = Unpinned();
    spec.edit_record = [row](std::string* record) { *record += row + "\n"; };
    auto in = WriteWheel(dir.path(), spec);
    ASSERT_OK(in.status());
    ASSERT_OK(fs::MakeDirs(dir.path() + "/out"));
    auto pinned = PinRequirement(*in, "torch==2.11.*", dir.path() + "/out");
    EXPECT_EQ(pinned.status().code(), StatusCode::kInvalidArgument) << row;
    EXPECT_NE(pinned.status().message().find("outside the wheel"), std::string::npos)
        << pinned.status().message();
    EXPECT_TRUE(std::filesystem::is_empty(dir.path() + "/out")) << row;
  }
}

TEST(PinRequirementTest, RefusesHostileWheels) {
  farm::testing::ScopedTempDir dir;
  ASSERT_OK(fs::MakeDirs(dir.path() + "/out"));
  auto refused = [&](WheelSpec spec, const std::string& why) {
    ASSERT_OK(fs::RemoveAll(dir.path() + "/in"));
    ASSERT_OK(fs::MakeDirs(dir.path() + "/in"));
    auto in = WriteWheel(dir.path() + "/in", spec);
    ASSERT_OK(in.status());
    auto pinned = PinRequirement(*in, "torch==2.11.*", dir.path() + "/out");
    EXPECT_EQ(pinned.status().code(), StatusCode::kInvalidArgument) << why;
    EXPECT_NE(pinned.status().message().find(why), std::string::npos) << pinned.status().message();
    EXPECT_TRUE(std::filesystem::is_empty(dir.path() + "/out")) << why;
  };
  WheelSpec huge = Unpinned();
  huge.metadata += std::string(static_cast<size_t>(kMaxDistInfoBytes), 'x');
  refused(huge, "larger than");
  WheelSpec binary = Unpinned();
  binary.metadata = "Metadata-Version: 2.1\nName: attn-\xc3\x28\nVersion: 1.0.0+cu130\n";
  refused(binary, "not UTF-8");
  WheelSpec twice = Unpinned();
  twice.metadata = "Metadata-Version: 2.1\nName: attn-example\nName: torch\nVersion: 1.0.0+cu130\n";
  refused(twice, "2 Name headers");
  WheelSpec duplicate_entry = Unpinned();
  duplicate_entry.unlisted.push_back({duplicate_entry.dist_info + "/METADATA",
                                      "Metadata-Version: 2.1\nName: other\nVersion: 9\n"});
  refused(duplicate_entry, "appears more than once");
  WheelSpec unlisted = Unpinned();
  unlisted.edit_record = [](std::string* record) {
    std::string row = "attn_example-1.0.0+cu130.dist-info/METADATA,";
    size_t at = record->find(row);
    record->erase(at, record->find('\n', at) - at + 1);
  };
  refused(unlisted, "0 times");
  WheelSpec second = Unpinned();
  second.unlisted.push_back({"other-1.0.dist-info/METADATA", "Name: other\n"});
  refused(second, "one top-level *.dist-info");
}

}  // namespace
}  // namespace farm::wheel
