// UploadArtifact: a wheel streamed by the worker, checked against its announced size and
// sha256 before it enters the content-addressed store.
#include "common/log.h"
#include "common/wheel/identity.h"
#include "common/wheel/job_check.h"
#include "common/wheel/relabel.h"
#include "common/wheel/wheel_name.h"
#include "daemon/api/handler.h"
#include "daemon/api/worker/worker_service.h"
#include "daemon/attest/attestor.h"
#include "daemon/auth/ownership.h"
#include "daemon/model/convert.h"

namespace farm::api {

using model::ArtifactToProto;
namespace {

bool SafeFilename(const std::string& name) {
  if (name.empty() || name.size() > 255 || name[0] == '.') return false;
  return name.find('/') == std::string::npos && name.find('\\') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

Result<store::JobRow> CheckHeader(const ServiceContext& ctx, const std::string& worker_id,
                                  const farm::v1::ArtifactHeader& h) {
  if (!SafeFilename(h.filename())) return Status::InvalidArgument("bad artifact file name");
  if (h.size() < 0) return Status::InvalidArgument("artifact size " + std::to_string(h.size()));
  if (h.size() > ctx.tunables.max_artifact_bytes) {
    return Status::InvalidArgument(h.filename() + " has " + std::to_string(h.size()) +
                                   " bytes, more than farmd's wheel size limit of " +
                                   std::to_string(ctx.tunables.max_artifact_bytes) +
                                   " bytes (--max-wheel-bytes)");
  }
  FARM_ASSIGN_OR_RETURN(auto job, ctx.store->GetJob(h.job_id()));
  if (job.attempt != h.attempt() || job.worker_id != worker_id || job.state != store::kJobRunning) {
    return Status::FailedPrecondition("attempt " + std::to_string(h.attempt()) + " of job " +
                                      std::to_string(h.job_id()) +
                                      " is not running on this worker");
  }
  return job;
}

// One name, one wheel: the local label must be the one the recipe's template gives for
// this cell and the images farmd itself found, so no two different wheels share a name.
Status CheckIdentity(const farm::v1::Recipe& recipe, const farm::v1::MatrixCell& cell,
                     const std::string& filename, const farm::v1::ArchManifest& manifest) {
  FARM_ASSIGN_OR_RETURN(auto images, wheel::ManifestImages(manifest));
  FARM_ASSIGN_OR_RETURN(std::string want, wheel::RecipeWheelLabel(recipe, cell, images));
  FARM_ASSIGN_OR_RETURN(wheel::WheelFilename name, wheel::ParseWheelFilename(filename));
  auto have = wheel::RenderLocalLabel(name.local_label, {});  // its PEP 440 normal form
  if (have.ok() && *have == want) return Status::Ok();
  return Status::FailedPrecondition(filename + " carries the local version label \"" +
                                    name.local_label + "\" but its cell and code images give \"" +
                                    want + "\"");
}

// The wheel's project belongs to the build's submitter (claimed now when nobody owns it)
// unless the submitter is an admin: one principal's build cannot publish wheels under a
// name another principal's wheels made theirs (docs/security.md, "Who may change what").
Status CheckProjectOwner(const ServiceContext& ctx, const store::BuildRow& build,
                         const std::string& filename) {
  FARM_ASSIGN_OR_RETURN(wheel::WheelFilename name, wheel::ParseWheelFilename(filename));
  Principal submitter{build.submitted_by, "", ""};
  if (ctx.auth != nullptr) {
    auto named = ctx.auth->PrincipalNamed(build.submitted_by);
    if (named.ok()) submitter = *named;  // else no live token: not an admin
  }
  auto owner = auth::ClaimProject(*ctx.store, submitter, wheel::NormalizeProjectName(name.name),
                                  ctx.clock->NowUnixMs());
  if (owner.ok()) return Status::Ok();
  log::Warn("rejected " + filename + " of build " + std::to_string(build.id) + " (submitted by " +
            build.submitted_by + "): " + owner.status().message());
  return owner.status().WithContext(filename);
}

// The worker checked the wheel already; farmd checks again, on the verified file before it
// enters the blob store, so that a broken or hostile worker cannot store a wheel without
// its kernels. The manifest stored is farmd's own.
Result<farm::v1::ArchManifest> CheckArrived(const ServiceContext& ctx, const store::JobRow& job,
                                            const farm::v1::ArtifactHeader& h,
                                            const std::string& path) {
  auto cell = model::ParseBlob<farm::v1::MatrixCell>(job.cell);
  FARM_ASSIGN_OR_RETURN(store::BuildRow build, ctx.store->GetBuild(job.build_id));
  auto recipe = model::ParseBlob<farm::v1::Recipe>(build.recipe);
  auto check = wheel::CheckJobWheel(path, h.filename(), cell, wheel::JobCheckOptions(recipe));
  if (!check.ok()) {
    return Status::InvalidArgument(h.filename() +
                                   " is not a readable wheel: " + check.status().message());
  }
  if (!check->ok()) {
    log::Warn("rejected " + h.filename() + " of job " + std::to_string(h.job_id()) + ": " +
              check->Summary());
    return Status::FailedPrecondition(h.filename() + " failed farmd's checks: " + check->Summary());
  }
  FARM_RETURN_IF_ERROR(CheckIdentity(recipe, cell, h.filename(), check->manifest));
  FARM_RETURN_IF_ERROR(CheckProjectOwner(ctx, build, h.filename()));
  std::string ignored = wheel::ArchListIgnoredMessage(cell.arch_list(), check->manifest);
  if (!ignored.empty())
    log::Warn(h.filename() + " of job " + std::to_string(h.job_id()) + ": " + ignored);
  return check->manifest;
}

Result<farm::v1::Artifact> Receive(const ServiceContext& ctx, const Principal& who,
                                   grpc::ServerReader<farm::v1::ArtifactUpload>* in) {
  farm::v1::ArtifactUpload msg;
  if (!in->Read(&msg) || !msg.has_header()) {
    return Status::InvalidArgument("an artifact upload starts with its header");
  }
  const farm::v1::ArtifactHeader header = msg.header();
  FARM_ASSIGN_OR_RETURN(store::JobRow job, CheckHeader(ctx, who.worker_id, header));
  FARM_ASSIGN_OR_RETURN(auto writer, ctx.blobs->BeginWrite(header.size(), header.sha256()));
  while (in->Read(&msg)) {
    if (!msg.has_data() && msg.part_case() != farm::v1::ArtifactUpload::kData) {
      return Status::InvalidArgument("only data may follow the header");
    }
    FARM_RETURN_IF_ERROR(writer->Append(msg.data()));
  }
  farm::v1::ArchManifest manifest;
  Status refused;  // the checks' own verdict names the file already
  Status committed = writer->Commit([&](const std::string& path) -> Status {
    auto checked = CheckArrived(ctx, job, header, path);
    if (!checked.ok()) return refused = checked.status();
    manifest = std::move(checked).value();
    return Status::Ok();
  });
  FARM_RETURN_IF_ERROR(refused);
  FARM_RETURN_IF_ERROR(committed.WithContext(header.filename()));
  store::ArtifactRow row{.job_id = header.job_id(),
                         .attempt = header.attempt(),
                         .filename = header.filename(),
                         .sha256 = header.sha256(),
                         .size = header.size(),
                         .manifest = manifest.SerializeAsString(),
                         .created_ms = ctx.clock->NowUnixMs()};
  FARM_ASSIGN_OR_RETURN(auto stored, ctx.store->InsertArtifact(row));
  if (ctx.attestor != nullptr) {  // no wheel without its provenance: the worker retries
    FARM_RETURN_IF_ERROR(ctx.attestor->AttestBuild(stored).WithContext(
        "signing the provenance of " + header.filename()));
  }
  log::Info("artifact " + header.filename() + " (" + std::to_string(header.size()) +
            " bytes, sha256 " + header.sha256() + ") stored for job " +
            std::to_string(header.job_id()));
  return ArtifactToProto(stored);
}

}  // namespace

grpc::Status WorkerService::UploadArtifact(grpc::ServerContext* call,
                                           grpc::ServerReader<farm::v1::ArtifactUpload>* in,
                                           farm::v1::UploadArtifactResponse* resp) {
  try {
    auto who = AuthorizePeer(*ctx_, *call, Need::kWorker);
    if (!who.ok()) return ToGrpc(who.status());
    auto artifact = Receive(*ctx_, who.value(), in);
    if (!artifact.ok()) return ToGrpc(artifact.status());
    *resp->mutable_artifact() = artifact.value();
    return grpc::Status::OK;
  } catch (const std::exception& e) {
    log::Error(std::string("artifact upload failed: ") + e.what());
    return grpc::Status(grpc::StatusCode::INTERNAL, "internal error");
  }
}

}  // namespace farm::api
