#include "cli/export/index_export.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <map>

#include "cli/export/export_dir.h"
#include "common/fs.h"
#include "common/sha256.h"

namespace farm::cli::exporter {
namespace {

constexpr char kBase[] = "http://127.0.0.1:9";
const std::string kWheelBytes = "PK\x03\x04 not really a zip, but bytes with a sha256";
const std::string kMetadata = "Metadata-Version: 2.1\nName: attn-example\nVersion: 0.1.0\n";

// farmd's index as a map of URL (and the format asked) to body; counts the requests.
class FakeIndex : public IndexHttp {
 public:
  Status Get(const std::string& url, const std::string& accept, int64_t max_bytes,
             const std::function<Status(std::string_view)>& sink) override {
    ++requests[url];
    std::string key = url + (accept.find("json") != std::string::npos ? "|json"
                             : accept.empty()                         ? ""
                                                                      : "|html");
    auto it = bodies.find(key);
    if (it == bodies.end()) it = bodies.find(url);
    if (it == bodies.end()) return Status::NotFound(url + ": HTTP 404 (not found)");
    if (static_cast<int64_t>(it->second.size()) > max_bytes) {
      return Status::InvalidArgument(url + " is larger than " + std::to_string(max_bytes));
    }
    return sink(it->second);
  }
  std::map<std::string, std::string> bodies;
  std::map<std::string, int> requests;
};

struct Farm {
  std::string sha = Sha256Hex(kWheelBytes);
  std::string name = "attn_example-0.1.0+cu130-py3-none-any.whl";
  std::string file() const { return "/files/" + sha + "/" + name; }
};

std::string ProjectJson(const Farm& f, const std::string& url) {
  return "{\"meta\":{\"api-version\":\"1.3\"},\"name\":\"attn-example\",\"files\":[{\"filename\":"
         "\"" +
         f.name + "\",\"url\":\"" + url + "\",\"hashes\":{\"sha256\":\"" + f.sha +
         "\"},\"size\":" + std::to_string(kWheelBytes.size()) +
         ",\"core-metadata\":{\"sha256\":\"" + Sha256Hex(kMetadata) +
         "\"}}],\"versions\":[\"0.1.0+cu130\"],\"variants-json\":[\"/files/variants/attn-example/"
         "attn_example-0.1.0-variants.json\"]}";
}

std::string ProjectHtml(const Farm& f, const std::string& href) {
  return "<!DOCTYPE html>\n<html><head><link rel=\"stylesheet\" href=\"/style.css\"></head>"
         "<body><a href=\"" +
         href + "\" data-core-metadata=\"sha256=" + Sha256Hex(kMetadata) + "\">" + f.name +
         "</a><br>\n</body></html>\n";
}

// One variant, one GPU view, one wheel: every page farmd would serve for it.
FakeIndex MakeIndex(const Farm& f) {
  FakeIndex index;
  std::string base = kBase;
  index.bodies[base + "/|json"] =
      "{\"index\":\"" + base + "/simple/\",\"install\":\"curl -fsSL " + base +
      "/install | python3 - PACKAGE\",\"variants\":[{\"variant\":\"cu130\",\"gpu\":\"sm90\","
      "\"compute_capability\":\"9.0\",\"cuda\":\"13.0\",\"torch\":\"\",\"index_url\":\"" +
      base + "/cu130/sm90/simple/\",\"projects\":[\"attn-example\"]}]}";
  for (const char* view : {"/simple/", "/cu130/simple/", "/cu130/sm90/simple/"}) {
    index.bodies[base + view + "|json"] =
        "{\"meta\":{\"api-version\":\"1.3\"},\"projects\":[{\"name\":\"attn-example\"}]}";
    index.bodies[base + view + "|html"] =
        "<html><body><header><a href=\"/#/builds\">Builds</a></header>"
        "<a href=\"attn-example/\">attn-example</a><br>\n<p>pip install --index-url " +
        base + view + " attn-example</p></body></html>\n";
    index.bodies[base + view + "attn-example/|json"] = ProjectJson(f, f.file());
    index.bodies[base + view + "attn-example/|html"] =
        ProjectHtml(f, f.file() + "#sha256=" + f.sha);
  }
  index.bodies[base + f.file()] = kWheelBytes;
  index.bodies[base + f.file() + ".metadata"] = kMetadata;
  index.bodies[base + "/files/variants/attn-example/attn_example-0.1.0-variants.json"] = "{}";
  index.bodies[base + "/style.css"] = "body{}";
  index.bodies[base + "/install"] = "DEFAULT_FARM = \"" + base + "\"\n";
  return index;
}

class ExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto tmp = fs::MakeTempDir("", "export-test-");
    ASSERT_TRUE(tmp.ok());
    root_ = *tmp;
    dir_ = root_ + "/out";
  }
  void TearDown() override { (void)fs::RemoveAll(root_); }

  Result<ExportSummary> Export(FakeIndex& index, const std::string& base_url = "",
                               bool force = false) {
    return ExportIndex(index,
                       {.farm_url = kBase, .dir = dir_, .base_url = base_url, .force = force});
  }

  // Every entry under root_, so a test sees anything written outside DIR.
  std::vector<std::string> Tree() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::recursive_directory_iterator(root_)) {
      out.push_back(e.path().string().substr(root_.size()));
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  std::string Read(const std::string& rel) const {
    auto r = fs::ReadFile(dir_ + "/" + rel);
    return r.ok() ? *r : "<missing " + rel + ">";
  }

  std::string root_, dir_;
  Farm farm_;
};

TEST_F(ExportTest, WritesEveryPageAndFileWithRelativeLinks) {
  FakeIndex index = MakeIndex(farm_);
  auto s = Export(index);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->views, 3);
  EXPECT_EQ(s->pages, 6);
  EXPECT_EQ(s->wheels, 1);
  EXPECT_EQ(s->wheels_downloaded, 1);
  EXPECT_EQ(Read(farm_.file().substr(1)), kWheelBytes);
  EXPECT_EQ(Read(farm_.file().substr(1) + ".metadata"), kMetadata);
  EXPECT_EQ(Read("files/variants/attn-example/attn_example-0.1.0-variants.json"), "{}");
  std::string page = Read("cu130/sm90/simple/attn-example/index.html");
  EXPECT_NE(page.find("href=\"../../../../files/" + farm_.sha + "/" + farm_.name +
                      "#sha256=" + farm_.sha + "\" data-core-metadata="),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("href=\"../../../../style.css\""), std::string::npos) << page;
  std::string json = Read("cu130/sm90/simple/attn-example/index.json");
  EXPECT_NE(json.find("\"url\":\"../../../../files/" + farm_.sha), std::string::npos) << json;
  EXPECT_NE(json.find("\"../../../../files/variants/attn-example/"), std::string::npos) << json;
  std::string list = Read("cu130/sm90/simple/index.html");
  EXPECT_NE(list.find("<header><a >Builds</a></header>"), std::string::npos) << list;
  EXPECT_NE(list.find("--index-url BASE_URL/cu130/sm90/simple/"), std::string::npos) << list;
  EXPECT_NE(Read("index.json").find("\"index_url\":\"cu130/sm90/simple/\""), std::string::npos);
  EXPECT_EQ(Read("install"), "DEFAULT_FARM = \"@FARM_URL@\"\n");
  EXPECT_NE(Read(kMarkerName).find("\"wheels\":1"), std::string::npos);
  // Only DIR, no leftover sibling.
  for (const auto& e : Tree()) EXPECT_TRUE(e.starts_with("/out")) << e;
}

TEST_F(ExportTest, ABaseUrlMakesLinksAbsoluteAndTheScriptPointsThere) {
  FakeIndex index = MakeIndex(farm_);
  ASSERT_TRUE(Export(index, "https://wheels.example/farm").ok());
  EXPECT_NE(Read("simple/attn-example/index.html")
                .find("href=\"https://wheels.example/farm/files/" + farm_.sha),
            std::string::npos);
  EXPECT_EQ(Read("install"), "DEFAULT_FARM = \"https://wheels.example/farm\"\n");
  EXPECT_NE(Read("index.json").find("https://wheels.example/farm/cu130/sm90/simple/"),
            std::string::npos);
}

TEST_F(ExportTest, ASecondExportReusesTheWheelsAndReplacesDir) {
  FakeIndex index = MakeIndex(farm_);
  ASSERT_TRUE(Export(index).ok());
  struct stat before;
  ASSERT_EQ(::stat((dir_ + farm_.file()).c_str(), &before), 0);
  auto s = Export(index);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->wheels_downloaded, 0);
  EXPECT_EQ(s->wheels_reused, 1);
  EXPECT_EQ(index.requests[std::string(kBase) + farm_.file()], 1);  // fetched once, ever
  struct stat after;
  ASSERT_EQ(::stat((dir_ + farm_.file()).c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);  // the same file, hard-linked
  for (const auto& e : Tree()) EXPECT_TRUE(e.starts_with("/out")) << e;

  // A reused copy that rotted is downloaded again, not trusted.
  ASSERT_TRUE(fs::WriteFileAtomic(dir_ + farm_.file(), "rotten").ok());
  s = Export(index);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->wheels_downloaded, 1);
  EXPECT_EQ(Read(farm_.file().substr(1)), kWheelBytes);
}

TEST_F(ExportTest, AWheelWhoseBytesDoNotMatchFailsAndLeavesThePreviousExport) {
  FakeIndex index = MakeIndex(farm_);
  ASSERT_TRUE(Export(index).ok());
  std::string marker = Read(kMarkerName);
  auto tree = Tree();
  // The previous copy is gone from the index's point of view: another wheel, wrong bytes.
  Farm other;
  other.sha = Sha256Hex("the bytes the page promises");
  FakeIndex bad = MakeIndex(other);
  bad.bodies[std::string(kBase) + other.file()] = std::string(kWheelBytes.size(), 'x');
  auto s = Export(bad);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(s.status().message().find("but its index page says " + other.sha), std::string::npos)
      << s.status().message();
  EXPECT_EQ(Tree(), tree);  // nothing renamed, no sibling left
  EXPECT_EQ(Read(kMarkerName), marker);
}

TEST_F(ExportTest, HostilePagesNeverNameAFileOutsideTheExport) {
  const std::string b = kBase;
  struct Case {
    std::string what, key, body;
  } cases[] = {
      {"a project named ../", b + "/simple/|json",
       "{\"projects\":[{\"name\":\"../../../escape\"}]}"},
      {"a file URL climbing out", b + "/simple/attn-example/|json",
       ProjectJson(farm_, "/files/" + farm_.sha + "/../../../../escape.whl")},
      {"a file name with a slash", b + "/simple/attn-example/|json",
       ProjectJson(farm_, farm_.file())
           .replace(ProjectJson(farm_, farm_.file()).find(farm_.name), farm_.name.size(),
                    "../escape.whl")},
      {"a file on another host", b + "/simple/attn-example/|json",
       ProjectJson(farm_, "http://evil.example" + farm_.file())},
      {"a fragment that is not the sha256", b + "/simple/attn-example/|json",
       ProjectJson(farm_, farm_.file() + "#sha256=" + std::string(64, '0'))},
      {"an HTML fragment that is not the sha256", b + "/simple/attn-example/|html",
       ProjectHtml(farm_, farm_.file() + "#sha256=" + std::string(64, '0'))},
      {"an HTML link to a file the JSON does not list", b + "/simple/attn-example/|html",
       ProjectHtml(farm_, "/files/" + std::string(64, '1') + "/x.whl")},
      {"a view that is no view", b + "/|json",
       "{\"variants\":[{\"index_url\":\"" + b + "/../../etc/\"}]}"},
      {"a view on another host", b + "/|json",
       "{\"variants\":[{\"index_url\":\"http://evil.example/cu130/sm90/simple/\"}]}"},
  };
  for (const Case& c : cases) {
    FakeIndex index = MakeIndex(farm_);
    index.bodies[c.key] = c.body;
    auto s = Export(index);
    EXPECT_FALSE(s.ok()) << c.what;
    EXPECT_TRUE(Tree().empty()) << c.what << ": " << (Tree().empty() ? "" : Tree().front());
  }
  // Links in HTML that climb out of the farm are only dropped: nothing is fetched for them.
  FakeIndex index = MakeIndex(farm_);
  index.bodies[b + "/simple/|html"] = "<a href=\"../../../../etc/passwd\">x</a>";
  ASSERT_TRUE(Export(index).ok());
  EXPECT_EQ(Read("simple/index.html"), "<a >x</a>");
}

TEST_F(ExportTest, TooLargeAPageOrAWheelLargerThanItsSizeFails) {
  FakeIndex index = MakeIndex(farm_);
  index.bodies[std::string(kBase) + "/simple/|json"] = std::string(kMaxPageBytes + 1, ' ');
  EXPECT_FALSE(Export(index).ok());
  index = MakeIndex(farm_);
  index.bodies[std::string(kBase) + farm_.file()] = kWheelBytes + "more";
  auto s = Export(index);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Tree().empty());
}

TEST_F(ExportTest, RefusesADirThatIsNotAnExportUnlessForced) {
  ASSERT_TRUE(fs::MakeDirs(dir_).ok());
  ASSERT_TRUE(fs::WriteFileAtomic(dir_ + "/precious.txt", "mine").ok());
  FakeIndex index = MakeIndex(farm_);
  auto s = Export(index);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("is not an export of farmctl export-index"),
            std::string::npos);
  EXPECT_EQ(Read("precious.txt"), "mine");
  EXPECT_TRUE(index.requests.empty());  // refused before reading farmd
  ASSERT_TRUE(Export(index, "", /*force=*/true).ok());
  EXPECT_FALSE(fs::Exists(dir_ + "/precious.txt"));
}

TEST_F(ExportTest, AFileAsDirOrAsItsParentIsSaidPlainly) {
  ASSERT_TRUE(fs::WriteFileAtomic(dir_, "a file").ok());
  FakeIndex index = MakeIndex(farm_);
  auto s = Export(index);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("exists and is not a directory"), std::string::npos);
  s = ExportIndex(index, {.farm_url = kBase, .dir = dir_ + "/sub/out"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.status().message().find("cannot export into " + dir_ + "/sub/out: Not a directory"),
            std::string::npos)
      << s.status().message();
  EXPECT_TRUE(index.requests.empty());
}

TEST_F(ExportTest, AParentWithoutWritePermissionIsSaidPlainly) {
  if (::geteuid() == 0) GTEST_SKIP() << "root may write into a directory of mode 0555";
  FakeIndex index = MakeIndex(farm_);
  std::string ro = root_ + "/ro";
  ASSERT_TRUE(fs::MakeDirs(ro, 0555).ok());
  auto s = ExportIndex(index, {.farm_url = kBase, .dir = ro + "/out"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.status().message().find("cannot write next to " + ro + "/out"), std::string::npos)
      << s.status().message();
  ::chmod(ro.c_str(), 0755);
}

TEST_F(ExportTest, AnOrphanOfAKilledExportIsRemovedAndDirKept) {
  FakeIndex index = MakeIndex(farm_);
  ASSERT_TRUE(Export(index).ok());
  std::string orphan = root_ + "/.out.export-Ab12Cd";
  ASSERT_TRUE(fs::MakeDirs(orphan).ok());
  ASSERT_TRUE(fs::WriteFileAtomic(orphan + "/half", "x").ok());
  ASSERT_TRUE(Export(index).ok());
  EXPECT_FALSE(fs::Exists(orphan));
}

}  // namespace
}  // namespace farm::cli::exporter
