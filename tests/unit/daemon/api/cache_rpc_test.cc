// AddToCache and ListCache over a real channel, against a farmd whose upstreams are out of
// reach (a closed port): preloaded wheels listed on their project's page, redist archives
// checked against their manifest, and the hostile uploads: path names in file names, NUL,
// non-distribution names and bytes, a huge name, a manifest whose sha256 disagrees, a
// stream cut short, a non-admin token. Nothing refused leaves a byte in the blob store.
#include <filesystem>

#include "common/sha256.h"
#include "daemon/mirror/pull_through.h"
#include "tests/unit/daemon/api/rpc_fixture.h"

namespace farm::api {
namespace {

constexpr char kWheel[] = "torch-2.8.0+cu128-cp311-cp311-manylinux_2_28_x86_64.whl";
constexpr char kUnreachable[] = "http://127.0.0.1:1/";

class CacheRpcTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(); }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  void Start() {
    ServerOptions o;
    o.data_dir = dir_.path() + "/data";
    o.listen = "127.0.0.1:0";
    o.http.listen = "127.0.0.1:0";
    o.publish_interval_ms = 3'600'000;
    o.upstream.indexes = {{"cu128", std::string(kUnreachable) + "whl/cu128/"}};
    o.upstream.trees = {{"redist", std::string(kUnreachable) + "redist/"}};
    auto server = FarmServer::Start(o);
    ASSERT_OK(server.status());
    server_ = std::move(server.value());
    auto admin = fs::ReadFile(o.data_dir + "/admin.token");
    ASSERT_OK(admin.status());
    admin_ = *admin;
    while (!admin_.empty() && (admin_.back() == '\n' || admin_.back() == ' ')) admin_.pop_back();
    auto channel = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    farm_ = farm::v1::FarmService::NewStub(channel);
  }

  std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token) {
    auto c = std::make_unique<grpc::ClientContext>();
    c->AddMetadata("authorization", "Bearer " + token);
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    return c;
  }

  std::string Token(const std::string& role) {
    farm::v1::CreateTokenRequest req;
    req.set_role(role);
    req.set_name(role + "-1");
    farm::v1::CreateTokenResponse resp;
    auto s = farm_->CreateToken(Ctx(admin_).get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp.token();
  }

  // Sends `header` (sha256 and size of `data` unless set), then `data` minus its last `cut`
  // bytes.
  grpc::Status Add(farm::v1::CacheAddHeader header, const std::string& data,
                   farm::v1::CacheAddResponse* resp, const std::string& token = "",
                   size_t cut = 0) {
    if (header.sha256().empty()) header.set_sha256(Sha256Hex(data));
    if (header.size() == 0) header.set_size(static_cast<int64_t>(data.size()));
    auto ctx = Ctx(token.empty() ? admin_ : token);
    auto writer = farm_->AddToCache(ctx.get(), resp);
    farm::v1::CacheAdd msg;
    *msg.mutable_header() = header;
    bool open = writer->Write(msg);
    std::string sent = data.substr(0, data.size() - cut);
    for (size_t at = 0; open && at < sent.size(); at += 100000) {
      msg.Clear();
      msg.set_data(sent.substr(at, 100000));
      open = writer->Write(msg);
    }
    writer->WritesDone();
    return writer->Finish();
  }

  static farm::v1::CacheAddHeader Wheel(const std::string& filename) {
    farm::v1::CacheAddHeader h;
    h.set_filename(filename);
    h.set_index("cu128");
    return h;
  }

  static farm::v1::CacheAddHeader InTree(const std::string& filename,
                                         const std::string& manifest = "") {
    farm::v1::CacheAddHeader h;
    h.set_filename(filename);
    h.set_tree("redist");
    h.set_manifest(manifest);
    return h;
  }

  std::vector<farm::v1::CachedFile> Listed() {
    farm::v1::ListCacheResponse resp;
    auto s = farm_->ListCache(Ctx(admin_).get(), {}, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return {resp.files().begin(), resp.files().end()};
  }

  // Every regular file under the blob store, staging included.
  std::vector<std::string> BlobFiles() {
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir_.path() + "/data")) {
      std::string p = e.path().string();
      if (e.is_regular_file() && p.find("/blobs/") != std::string::npos) files.push_back(p);
    }
    return files;
  }

  mirror::PullThroughCache& cache() { return *server_->context()->mirror; }

  // A wheel's bytes: a zip's magic, then anything.
  static std::string WheelBytes(const std::string& salt) {
    return std::string("PK\x03\x04", 4) + std::string(250000, 'w') + salt;
  }

  farm::testing::ScopedTempDir dir_;
  std::unique_ptr<FarmServer> server_;
  std::string admin_;
  std::unique_ptr<farm::v1::FarmService::Stub> farm_;
};

TEST_F(CacheRpcTest, APreloadedWheelIsServedOfflineOnceAndNeverReplaced) {
  std::string bytes = WheelBytes("1");
  std::string sha = Sha256Hex(bytes);
  farm::v1::CacheAddResponse resp;
  auto s = Add(Wheel(kWheel), bytes, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_FALSE(resp.already());
  EXPECT_EQ(resp.received_bytes(), static_cast<int64_t>(bytes.size()));
  EXPECT_EQ(resp.file().kind(), "index-file");
  EXPECT_EQ(resp.file().path(), kWheel);
  // The index's project page lists it with upstream out of reach; the file is the blob.
  auto page = cache().IndexPage(
      {.index = "cu128", .project = "torch", .json = true, .files_base = "/upstream/files/"});
  ASSERT_OK(page.status());
  EXPECT_NE(page->body.find(sha), std::string::npos) << page->body;
  EXPECT_OK(cache().File({.index = "cu128", .sha256 = sha, .filename = kWheel}).status());

  // The same file again: a no-op that says so, whether named by index name or URL.
  farm::v1::CacheAddHeader by_url = Wheel(kWheel);
  by_url.set_index(std::string(kUnreachable) + "whl/cu128");
  s = Add(by_url, bytes, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(resp.already());
  EXPECT_EQ(resp.received_bytes(), 0);
  // Other bytes under that name: refused, the first stays.
  std::string other = WheelBytes("2");
  EXPECT_EQ(Add(Wheel(kWheel), other, &resp).error_code(), StatusCode::ALREADY_EXISTS);
  EXPECT_EQ(server_->context()->blobs->Contains(Sha256Hex(other)), false);
  ASSERT_EQ(Listed().size(), 1u);
  EXPECT_EQ(Listed()[0].sha256(), sha);

  // A restarted farmd serves it again (migration 025 keeps the preload).
  server_->Shutdown();
  server_.reset();
  Start();
  page =
      cache().IndexPage({.index = "cu128", .project = "torch", .files_base = "/upstream/files/"});
  ASSERT_OK(page.status());
  EXPECT_NE(page->body.find(sha), std::string::npos) << page->body;
}

TEST_F(CacheRpcTest, HostileNamesAndBytesAreRefusedBeforeAnythingIsStored) {
  std::string bytes = WheelBytes("h");
  const std::string kHostile[] = {
      "../" + std::string(kWheel),
      "/tmp/" + std::string(kWheel),
      "sub/" + std::string(kWheel),
      std::string("torch\0-2.8.0-py3-none-any.whl", 30),
      "torch-2.8.0-py3-none-any.whl\n",
      "..\\torch-2.8.0-py3-none-any.whl",
      ".torch-2.8.0.tar.gz",
      "notes.txt",
      "torch.whl",
      "torch-2.8.0.tar.bz2",
      std::string(300, 'a') + "-1.0-py3-none-any.whl",
      std::string(1 << 20, 'a') + "-1.0-py3-none-any.whl",
  };
  for (const std::string& name : kHostile) {
    farm::v1::CacheAddResponse resp;
    auto s = Add(Wheel(name), bytes, &resp);
    EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT) << name.substr(0, 60);
  }
  // A good name over bytes that are not its format's.
  farm::v1::CacheAddResponse resp;
  auto s = Add(Wheel(kWheel), std::string(1000, 'x'), &resp);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT) << s.error_message();
  s = Add(Wheel("flash_attn-2.8.3.tar.gz"), std::string("PK\x03\x04", 4), &resp);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT) << s.error_message();
  // An index or tree farmd does not serve; both at once.
  farm::v1::CacheAddHeader h = Wheel(kWheel);
  h.set_index("cu999");
  EXPECT_EQ(Add(h, bytes, &resp).error_code(), StatusCode::NOT_FOUND);
  h.set_index("cu128");
  h.set_tree("redist");
  EXPECT_EQ(Add(h, bytes, &resp).error_code(), StatusCode::INVALID_ARGUMENT);
  // A size or digest that is not one.
  h = Wheel(kWheel);
  h.set_sha256("../../etc/passwd");
  EXPECT_EQ(Add(h, bytes, &resp).error_code(), StatusCode::INVALID_ARGUMENT);
  h = Wheel(kWheel);
  h.set_size(-5);
  EXPECT_EQ(Add(h, bytes, &resp).error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(Listed().empty());
  EXPECT_TRUE(BlobFiles().empty()) << BlobFiles()[0];
}

TEST_F(CacheRpcTest, AStreamCutShortOrLyingStoresNothing) {
  std::string bytes = WheelBytes("cut");
  farm::v1::CacheAddResponse resp;
  auto s = Add(Wheel(kWheel), bytes, &resp, "", /*cut=*/1000);
  EXPECT_EQ(s.error_code(), StatusCode::DATA_LOSS) << s.error_message();
  // Announced as other bytes than those sent.
  farm::v1::CacheAddHeader h = Wheel(kWheel);
  h.set_sha256(Sha256Hex("something else"));
  EXPECT_EQ(Add(h, bytes, &resp).error_code(), StatusCode::DATA_LOSS);
  // More bytes than announced.
  h = Wheel(kWheel);
  h.set_size(100);
  EXPECT_EQ(Add(h, bytes, &resp).error_code(), StatusCode::INVALID_ARGUMENT);
  // The client goes away mid-stream.
  {
    auto ctx = Ctx(admin_);
    auto writer = farm_->AddToCache(ctx.get(), &resp);
    farm::v1::CacheAdd msg;
    *msg.mutable_header() = Wheel(kWheel);
    msg.mutable_header()->set_sha256(Sha256Hex(bytes));
    msg.mutable_header()->set_size(static_cast<int64_t>(bytes.size()));
    ASSERT_TRUE(writer->Write(msg));
    msg.Clear();
    msg.set_data(bytes.substr(0, 1000));
    ASSERT_TRUE(writer->Write(msg));
    ctx->TryCancel();
    EXPECT_FALSE(writer->Finish().ok());
  }
  for (int i = 0; i < 100 && !BlobFiles().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the handler sees the cancel
  }
  EXPECT_TRUE(BlobFiles().empty()) << BlobFiles()[0];
  EXPECT_TRUE(Listed().empty());
  // After all that, the whole file goes in.
  s = Add(Wheel(kWheel), bytes, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
}

TEST_F(CacheRpcTest, OnlyAnAdminPreloadsAndAViewerMayLook) {
  std::string bytes = WheelBytes("r");
  farm::v1::CacheAddResponse resp;
  for (const std::string role : {"viewer", "submitter"}) {
    auto s = Add(Wheel(kWheel), bytes, &resp, Token(role));
    EXPECT_EQ(s.error_code(), StatusCode::PERMISSION_DENIED) << role;
  }
  EXPECT_EQ(Add(Wheel(kWheel), bytes, &resp, "not-a-token").error_code(),
            StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(BlobFiles().empty());
  ASSERT_TRUE(Add(Wheel(kWheel), bytes, &resp).ok());
  farm::v1::ListCacheResponse listed;
  ASSERT_TRUE(farm_->ListCache(Ctx(Token("viewer")).get(), {}, &listed).ok());
  ASSERT_EQ(listed.files_size(), 1);
  EXPECT_EQ(listed.files(0).added_by(), "bootstrap-admin");
}

TEST_F(CacheRpcTest, RedistArchivesMustBeTheOnesTheirManifestLists) {
  std::string nvcc = "nvcc archive bytes";
  std::string cudart = "cudart archive bytes";
  std::string manifest =
      R"({"release_date": "2025-01-01",
          "cuda_nvcc": {"name": "CUDA NVCC",
            "linux-x86_64": {"relative_path": "cuda_nvcc/linux-x86_64/cuda_nvcc-12.8.93-archive.tar.xz",
                             "sha256": ")" +
      Sha256Hex(nvcc) + R"(", "size": ")" + std::to_string(nvcc.size()) + R"("}},
          "cuda_cudart": {"linux-x86_64": {"relative_path": "cuda_cudart/linux-x86_64/cuda_cudart-12.8.90-archive.tar.xz",
                             "sha256": ")" +
      std::string(64, 'c') + R"(", "size": 20}}})";
  farm::v1::CacheAddResponse resp;
  // An archive before its manifest.
  EXPECT_EQ(Add(InTree("cuda_nvcc-12.8.93-archive.tar.xz", "redistrib_12.8.1.json"), nvcc, &resp)
                .error_code(),
            StatusCode::FAILED_PRECONDITION);
  ASSERT_TRUE(Add(InTree("redistrib_12.8.1.json"), manifest, &resp).ok());
  EXPECT_EQ(resp.file().kind(), "manifest");
  auto s = Add(InTree("cuda_nvcc-12.8.93-archive.tar.xz", "redistrib_12.8.1.json"), nvcc, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.file().path(), "cuda_nvcc/linux-x86_64/cuda_nvcc-12.8.93-archive.tar.xz");
  // The manifest's sha256 disagrees with the archive: refused before a byte is read.
  s = Add(InTree("cuda_cudart-12.8.90-archive.tar.xz", "redistrib_12.8.1.json"), cudart, &resp);
  EXPECT_EQ(s.error_code(), StatusCode::FAILED_PRECONDITION) << s.error_message();
  EXPECT_NE(s.error_message().find("nothing stored"), std::string::npos) << s.error_message();
  EXPECT_FALSE(server_->context()->blobs->Contains(Sha256Hex(cudart)));
  // Not listed, or a manifest that is not one.
  EXPECT_EQ(Add(InTree("libcublas-12.8-archive.tar.xz", "redistrib_12.8.1.json"), cudart, &resp)
                .error_code(),
            StatusCode::NOT_FOUND);
  EXPECT_EQ(Add(InTree("cuda_nvcc-12.8.93-archive.tar.xz"), nvcc, &resp).error_code(),
            StatusCode::INVALID_ARGUMENT);
  std::string escaping =
      R"({"x": {"linux-x86_64": {"relative_path": "../../etc/passwd", "sha256": ")" +
      std::string(64, 'a') + R"("}}})";
  EXPECT_EQ(Add(InTree("redistrib_evil.json"), escaping, &resp).error_code(),
            StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Add(InTree("redistrib_empty.json"), "{}", &resp).error_code(),
            StatusCode::INVALID_ARGUMENT);

  // Offline, the tree lists the manifest and serves both files by their paths.
  auto listing = cache().TreeFile("redist", "");
  ASSERT_OK(listing.status());
  EXPECT_NE(listing->body.find("href=\"redistrib_12.8.1.json\""), std::string::npos)
      << listing->body;
  auto served = cache().TreeFile("redist", "redistrib_12.8.1.json");
  ASSERT_OK(served.status());
  EXPECT_EQ(served->blob_sha256, Sha256Hex(manifest));
  served = cache().TreeFile("redist", "cuda_nvcc/linux-x86_64/cuda_nvcc-12.8.93-archive.tar.xz");
  ASSERT_OK(served.status());
  EXPECT_EQ(served->blob_sha256, Sha256Hex(nvcc));
  EXPECT_EQ(Listed().size(), 2u);
}

}  // namespace
}  // namespace farm::api
