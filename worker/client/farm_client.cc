#include "worker/client/farm_client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "common/log.h"
#include "common/sha256.h"

namespace farm::agent {
namespace {

constexpr int64_t kCallTimeoutMs = 15000;
constexpr size_t kChunkBytes = 1 << 20;
constexpr int64_t kDownloadTimeoutMs = 30 * 60 * 1000;
constexpr int kDownloadTries = 6;

Status FromGrpc(const grpc::Status& s, const std::string& call) {
  if (s.ok()) return Status::Ok();
  return Status(static_cast<StatusCode>(s.error_code()), call + ": " + s.error_message());
}

}  // namespace

GrpcFarmClient::GrpcFarmClient(std::function<Result<std::string>()> resolve, net::ClientTls tls)
    : resolve_(std::move(resolve)), tls_(std::move(tls)) {}

Status GrpcFarmClient::Connect() {
  FARM_ASSIGN_OR_RETURN(std::string address, resolve_());
  grpc::ChannelArguments args = net::ChannelArgs();
  FARM_ASSIGN_OR_RETURN(auto credentials, net::ChannelCredentials(address, tls_, &args));
  auto channel = grpc::CreateCustomChannel(address, credentials, args);
  std::lock_guard lock(mu_);
  if (address != address_) {
    if (!tls_.ca_file.empty()) {
      log::Info("connecting to farmd at " + address + " over TLS, verified against " +
                tls_.ca_file + (tls_.cert_file.empty() ? "" : ", presenting " + tls_.cert_file));
    } else if (net::IsLoopback(address)) {
      log::Info("connecting to farmd at " + address + " in plaintext on this machine");
    } else {
      log::Warn("connecting to farmd at " + address +
                " IN PLAINTEXT (--insecure): tokens, "
                "sources and wheels cross the network in clear");
    }
  }
  address_ = address;
  stub_ = farm::v1::WorkerService::NewStub(channel);
  return Status::Ok();
}

void GrpcFarmClient::Reconnect() {
  auto address = resolve_();
  {
    std::lock_guard lock(mu_);
    if (!address.ok() || *address == address_) return;
  }
  Status s = Connect();
  if (!s.ok()) log::Warn("reconnecting to farmd: " + s.ToString());
}

std::shared_ptr<farm::v1::WorkerService::Stub> GrpcFarmClient::stub() {
  std::lock_guard lock(mu_);
  return stub_;
}

void GrpcFarmClient::SetToken(const std::string& worker_token) {
  std::lock_guard lock(mu_);
  token_ = worker_token;
}

void GrpcFarmClient::Prepare(grpc::ClientContext& ctx, int64_t timeout_ms,
                             const std::string& bearer) {
  std::string token = bearer;
  if (token.empty()) {
    std::lock_guard lock(mu_);
    token = token_;
  }
  ctx.AddMetadata("authorization", "Bearer " + token);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
}

Result<farm::v1::RegisterResponse> GrpcFarmClient::Register(const farm::v1::RegisterRequest& req,
                                                            const std::string& bearer) {
  grpc::ClientContext ctx;
  Prepare(ctx, kCallTimeoutMs, bearer);
  farm::v1::RegisterResponse resp;
  FARM_RETURN_IF_ERROR(FromGrpc(stub()->Register(&ctx, req, &resp), "Register"));
  return resp;
}

Result<farm::v1::HeartbeatResponse> GrpcFarmClient::Heartbeat(
    const farm::v1::HeartbeatRequest& req) {
  grpc::ClientContext ctx;
  Prepare(ctx, kCallTimeoutMs);
  farm::v1::HeartbeatResponse resp;
  FARM_RETURN_IF_ERROR(FromGrpc(stub()->Heartbeat(&ctx, req, &resp), "Heartbeat"));
  return resp;
}

Result<farm::v1::AcquireJobResponse> GrpcFarmClient::AcquireJob(
    const farm::v1::AcquireJobRequest& req) {
  grpc::ClientContext ctx;
  Prepare(ctx, req.wait_ms() + kCallTimeoutMs);
  {
    std::lock_guard lock(mu_);
    if (waits_cancelled_) return Status::Cancelled("AcquireJob: worker stopping");
    waits_.push_back(&ctx);
  }
  farm::v1::AcquireJobResponse resp;
  grpc::Status s = stub()->AcquireJob(&ctx, req, &resp);
  {
    std::lock_guard lock(mu_);
    waits_.erase(std::find(waits_.begin(), waits_.end(), &ctx));
  }
  FARM_RETURN_IF_ERROR(FromGrpc(s, "AcquireJob"));
  return resp;
}

void GrpcFarmClient::CancelWaits() {
  std::lock_guard lock(mu_);
  waits_cancelled_ = true;
  for (auto* ctx : waits_) ctx->TryCancel();
}

Result<int64_t> GrpcFarmClient::UploadLog(int64_t job_id, int32_t attempt,
                                          const std::vector<farm::v1::LogLine>& lines) {
  grpc::ClientContext ctx;
  Prepare(ctx, kCallTimeoutMs * 2);
  farm::v1::UploadLogResponse resp;
  auto writer = stub()->UploadLog(&ctx, &resp);
  farm::v1::LogChunk chunk;
  chunk.set_job_id(job_id);
  chunk.set_attempt(attempt);
  for (const auto& l : lines) *chunk.add_lines() = l;
  writer->Write(chunk);  // a failed write shows in Finish()
  writer->WritesDone();
  FARM_RETURN_IF_ERROR(FromGrpc(writer->Finish(), "UploadLog"));
  return resp.acked_seq();
}

Result<farm::v1::Artifact> GrpcFarmClient::UploadArtifact(const farm::v1::ArtifactHeader& header,
                                                          const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open " + path);
  grpc::ClientContext ctx;
  Prepare(ctx, 10 * 60 * 1000);
  farm::v1::UploadArtifactResponse resp;
  auto writer = stub()->UploadArtifact(&ctx, &resp);
  farm::v1::ArtifactUpload msg;
  *msg.mutable_header() = header;
  bool ok = writer->Write(msg);
  std::string buf(kChunkBytes, '\0');
  while (ok && in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    std::streamsize n = in.gcount();
    if (n <= 0) break;
    msg.Clear();
    msg.set_data(buf.data(), static_cast<size_t>(n));
    ok = writer->Write(msg);
  }
  writer->WritesDone();
  FARM_RETURN_IF_ERROR(FromGrpc(writer->Finish(), "UploadArtifact"));
  if (in.bad()) return Status::Internal("reading " + path + " failed");
  return resp.artifact();
}

Result<farm::v1::CompleteJobResponse> GrpcFarmClient::CompleteJob(
    const farm::v1::CompleteJobRequest& req) {
  grpc::ClientContext ctx;
  Prepare(ctx, kCallTimeoutMs);
  farm::v1::CompleteJobResponse resp;
  FARM_RETURN_IF_ERROR(FromGrpc(stub()->CompleteJob(&ctx, req, &resp), "CompleteJob"));
  return resp;
}

Status GrpcFarmClient::ReadSourceStream(int64_t job_id, int32_t attempt,
                                        const farm::v1::SourceArchive& archive, FILE* out,
                                        Sha256* hasher, int64_t* have) {
  grpc::ClientContext ctx;
  Prepare(ctx, kDownloadTimeoutMs);
  farm::v1::DownloadSourceRequest req;
  req.set_job_id(job_id);
  req.set_attempt(attempt);
  req.set_sha256(archive.sha256());
  req.set_offset(*have);  // a broken stream resumes where it stopped
  auto reader = stub()->DownloadSource(&ctx, req);
  farm::v1::SourceChunk chunk;
  Status local;
  while (local.ok() && reader->Read(&chunk)) {
    const std::string& data = chunk.data();
    if (*have + static_cast<int64_t>(data.size()) > archive.size()) {
      local = Status::DataLoss("farmd sent more than the archive's " +
                               std::to_string(archive.size()) + " bytes");
    } else if (fwrite(data.data(), 1, data.size(), out) != data.size()) {
      local = Status::Internal("cannot write the source archive");
    } else {
      hasher->Update(data);
      *have += static_cast<int64_t>(data.size());
    }
  }
  if (!local.ok()) ctx.TryCancel();
  Status call = FromGrpc(reader->Finish(), "DownloadSource");
  return local.ok() ? call : local;
}

Status GrpcFarmClient::DownloadSource(int64_t job_id, int32_t attempt,
                                      const farm::v1::SourceArchive& archive,
                                      const std::string& path) {
  FILE* out = fopen(path.c_str(), "wb");
  if (out == nullptr) return Status::Internal("cannot create " + path);
  Sha256 hasher;
  int64_t have = 0;
  Status s;
  for (int tries = 1; tries <= kDownloadTries; ++tries) {
    s = ReadSourceStream(job_id, attempt, archive, out, &hasher, &have);
    bool transient =
        s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kDeadlineExceeded;
    if (s.ok() || !transient || tries == kDownloadTries) break;
    log::Warn("source download of job " + std::to_string(job_id) + " broke after " +
              std::to_string(have) + " bytes (" + s.message() + "); resuming");
    std::this_thread::sleep_for(std::chrono::milliseconds(500 << tries));
  }
  if (fclose(out) != 0 && s.ok()) s = Status::Internal("cannot write " + path);
  FARM_RETURN_IF_ERROR(s);
  std::string sha = hasher.HexDigest();
  if (have != archive.size() || sha != archive.sha256()) {
    return Status::DataLoss("the source archive arrived with " + std::to_string(have) +
                            " bytes and sha256 " + sha + ", expected " +
                            std::to_string(archive.size()) + " bytes and " + archive.sha256());
  }
  return Status::Ok();
}

Status FarmClient::DownloadArtifact(int64_t, int32_t, int64_t artifact_id, const std::string&) {
  return Status::Unimplemented("DownloadArtifact of artifact " + std::to_string(artifact_id));
}

Status GrpcFarmClient::DownloadArtifact(int64_t job_id, int32_t attempt, int64_t artifact_id,
                                        const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status::Internal("cannot write " + path);
  grpc::ClientContext ctx;
  Prepare(ctx, 10 * 60 * 1000);
  farm::v1::WorkerArtifactRequest req;
  req.set_job_id(job_id);
  req.set_attempt(attempt);
  req.set_artifact_id(artifact_id);
  auto reader = stub()->DownloadArtifact(&ctx, req);
  farm::v1::ArtifactData chunk;
  while (reader->Read(&chunk)) {
    out.write(chunk.data().data(), static_cast<std::streamsize>(chunk.data().size()));
  }
  FARM_RETURN_IF_ERROR(FromGrpc(reader->Finish(), "DownloadArtifact"));
  out.close();
  if (!out) return Status::Internal("writing " + path + " failed");
  return Status::Ok();
}

}  // namespace farm::agent
