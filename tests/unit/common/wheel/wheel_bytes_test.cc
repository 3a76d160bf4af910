#include "common/wheel/wheel_bytes.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "common/wheel/job_check.h"
#include "common/wheel/zip_directory.h"
#include "tests/support/test_util.h"
#include "tests/unit/common/wheel/elf/fatbin_fixture.h"
#include "tests/unit/common/wheel/wheel_builder.h"

namespace farm::wheel {
namespace {

constexpr const char* kBytesModule = "attn_example/_attn_example.so";

class WheelBytesTest : public ::testing::Test {
 protected:
  std::string Wheel(const std::string& so, const std::string& extra = "") {
    testing::WheelSpec spec;
    spec.files.push_back({kBytesModule, so, testing::ZipEntrySpec::Type::kFile});
    if (!extra.empty()) spec.files.push_back({"attn_example/data.bin", extra});
    Result<std::string> path = testing::WriteWheel(dir_.path(), spec);
    EXPECT_TRUE(path.ok()) << path.status().ToString();
    return path.ok() ? *path : "";
  }
  farm::v1::ArchManifest Manifest(const std::string& wheel, int64_t budget = 0,
                                  std::vector<Problem>* problems = nullptr) {
    farm::v1::MatrixCell cell;
    cell.set_python("3.12");
    InspectOptions options;
    options.size_budget_bytes = budget;
    auto check = CheckJobWheel(wheel, "", cell, options);
    EXPECT_TRUE(check.ok()) << check.status().ToString();
    if (problems != nullptr && check.ok()) *problems = check->problems;
    return check.ok() ? check->manifest : farm::v1::ArchManifest{};
  }
  farm::testing::ScopedTempDir dir_;
};

int64_t FileSize(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  return static_cast<int64_t>(f.tellg());
}

TEST(ZipDirectoryTest, ListsStoredAndUnpackedSizesOfEveryEntry) {
  farm::testing::ScopedTempDir dir;
  const std::string path = dir.path() + "/a.zip";
  std::string zeros(100'000, '\0');
  ASSERT_OK(testing::WriteZip(path, {{"a/zeros", zeros}, {"b.txt", "hello"}}));
  auto zip = ReadZipDirectory(path);
  ASSERT_OK(zip.status());
  EXPECT_EQ(zip->file_bytes, FileSize(path));
  ASSERT_EQ(zip->entries.size(), 2u);
  EXPECT_EQ(zip->entries[0].name, "a/zeros");
  EXPECT_EQ(zip->entries[0].uncompressed, 100'000);
  EXPECT_LT(zip->entries[0].compressed, 1'000);  // deflated
  EXPECT_EQ(zip->entries[1].uncompressed, 5);
}

TEST(ZipDirectoryTest, RefusesTruncatedAndForeignFiles) {
  farm::testing::ScopedTempDir dir;
  const std::string path = dir.path() + "/a.zip";
  ASSERT_OK(testing::WriteZip(path, {{"x", std::string(5000, 'x')}}));
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  for (size_t cut : {size_t{0}, size_t{10}, bytes.size() - 30, bytes.size() - 1}) {
    std::ofstream(dir.path() + "/cut.zip", std::ios::binary) << bytes.substr(0, cut);
    EXPECT_FALSE(ReadZipDirectory(dir.path() + "/cut.zip").ok()) << cut;
  }
  // An end record whose directory offset points past the file.
  std::string bad = bytes;
  size_t end = bad.rfind(std::string("PK\x05\x06", 4));
  ASSERT_NE(end, std::string::npos);
  bad[end + 16] = '\xff';
  bad[end + 19] = '\x7f';
  std::ofstream(dir.path() + "/bad.zip", std::ios::binary) << bad;
  auto r = ReadZipDirectory(dir.path() + "/bad.zip");
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status().ToString();
  EXPECT_EQ(ReadZipDirectory(dir.path() + "/missing.zip").status().code(), StatusCode::kNotFound);
}

TEST(DeflatedSizeTest, MeasuresWhatDeflateMakes) {
  EXPECT_LT(DeflatedSize(std::string(1 << 20, 'a')), 10'000);
  std::string noise;
  uint32_t x = 12345;
  for (int i = 0; i < 100'000; ++i) noise += static_cast<char>((x = x * 1103515245 + 12345) >> 24);
  EXPECT_GT(DeflatedSize(noise), 99'000);
  EXPECT_GT(DeflatedSize(""), 0);
}

TEST_F(WheelBytesTest, ImagesPartsAndRestAddUpToTheWheelFile) {
  FARM_LOAD_MODULE_OR_SKIP("multi", so);
  const std::string wheel = Wheel(so, std::string(300'000, 'z'));
  farm::v1::ArchManifest m = Manifest(wheel);
  ASSERT_TRUE(m.has_bytes());
  const auto& b = m.bytes();
  EXPECT_EQ(b.wheel_bytes(), FileSize(wheel));
  int64_t c = b.rest().compressed_bytes(), u = b.rest().uncompressed_bytes();
  for (const auto& image : m.images()) {
    EXPECT_GT(image.compressed_bytes(), 0) << image.arch();
    EXPECT_GT(image.fatbin_bytes(), image.compressed_bytes()) << image.arch();  // deflated
    EXPECT_GE(image.uncompressed_bytes(), image.fatbin_bytes() - 200) << image.arch();
    c += image.compressed_bytes();
    u += image.fatbin_bytes();
  }
  std::set<std::string> parts;
  for (const auto& p : b.largest()) {
    parts.insert(p.name());
    c += p.compressed_bytes();
    u += p.uncompressed_bytes();
  }
  EXPECT_EQ(c, b.wheel_bytes());
  EXPECT_EQ(u, b.uncompressed_bytes());
  EXPECT_TRUE(parts.count(std::string(kBytesModule) + " (other)"));
  EXPECT_TRUE(parts.count("attn_example/data.bin"));
  std::string table = FormatWheelBytes(m, "  ");
  EXPECT_NE(table.find("sm_90a in attn_example/_attn_example.so"), std::string::npos) << table;
  EXPECT_NE(table.find("wheel"), std::string::npos) << table;
}

TEST_F(WheelBytesTest, CompressedImagesAreCountedAsNvccLeftThem) {
  FARM_LOAD_MODULE_OR_SKIP("multi", plain);
  FARM_LOAD_MODULE_OR_SKIP("multi_zstd", packed);
  farm::v1::ArchManifest a = Manifest(Wheel(plain));
  farm::v1::ArchManifest b = Manifest(Wheel(packed));
  ASSERT_EQ(a.images_size(), b.images_size());
  for (int i = 0; i < b.images_size(); ++i) {
    const auto& image = b.images(i);
    if (!image.compressed()) continue;
    EXPECT_LT(image.fatbin_bytes(), image.uncompressed_bytes()) << image.arch();
    EXPECT_LE(image.compressed_bytes(), image.fatbin_bytes()) << image.arch();
  }
  EXPECT_NE(FormatWheelBytes(b, "").find("nvcc-compressed to"), std::string::npos);
}

TEST_F(WheelBytesTest, ABudgetTheWheelExceedsIsAProblemNamingTheLargestParts) {
  FARM_LOAD_MODULE_OR_SKIP("multi", so);
  const std::string wheel = Wheel(so);
  std::vector<Problem> problems;
  Manifest(wheel, FileSize(wheel), &problems);
  EXPECT_TRUE(problems.empty()) << problems.front().ToString();  // exactly the budget fits
  farm::v1::ArchManifest m = Manifest(wheel, 10'000, &problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].rule, "size-budget");
  EXPECT_NE(problems[0].detail.find("over the recipe's size_budget of 9.8 KiB (10000 bytes)"),
            std::string::npos)
      << problems[0].detail;
  EXPECT_NE(problems[0].detail.find("largest parts: "), std::string::npos);
  EXPECT_NE(problems[0].detail.find(" in attn_example/_attn_example.so"), std::string::npos);
  EXPECT_EQ(LargestPartsText(m, 1).find(','), std::string::npos);
}

TEST(SizeTextTest, PicksTheUnit) {
  EXPECT_EQ(SizeText(812), "812 B");
  EXPECT_EQ(SizeText(147'080), "143.6 KiB");
  EXPECT_EQ(SizeText(50'753'536), "48.4 MiB");
  EXPECT_EQ(SizeText(int64_t{2} << 30), "2.00 GiB");
}

}  // namespace
}  // namespace farm::wheel
