// Sources as content: clients upload source archives (FindSource, UploadSource), builds
// and schedules name them by sha256 (CheckBuildSource), workers fetch the one of an attempt
// they hold (api/worker/source_download.cc), and archives nothing needs any more are
// collected (CollectSources). Every upload is checked against its announced size and sha256 and the
// hostile-archive rules (common/archive/source_archive.h) before it enters the store.
#include "common/archive/source_archive.h"
#include "common/log.h"
#include "common/recipe/recipe.h"
#include "common/utf8.h"
#include "daemon/api/client/client_service.h"
#include "daemon/api/handler.h"
#include "daemon/model/convert.h"
#include "daemon/quota/quota.h"

namespace farm::api {
namespace {

constexpr size_t kMaxOriginBytes = 512;

bool IsSha256(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Status CheckSha(const std::string& sha256) {
  if (IsSha256(sha256)) return Status::Ok();
  return Status::InvalidArgument(
      "a source archive is named by its sha256, 64 lowercase hex "
      "digits; got \"" +
      sha256.substr(0, 80) + "\"");
}

// The stored record of an archive whose blob is there too.
Result<store::SourceArchiveRow> StoredSource(const ServiceContext& ctx, const std::string& sha) {
  auto row = ctx.store->GetSourceArchive(sha);
  if (!row.ok() && row.status().code() != StatusCode::kNotFound) return row.status();
  if (!row.ok() || !ctx.blobs->Contains(sha)) {
    return Status::NotFound("source archive " + sha + " is not on farmd");
  }
  return row;
}

Result<farm::v1::SourceUploadResponse> Receive(const ServiceContext& ctx, const Principal& who,
                                               grpc::ServerReader<farm::v1::SourceUpload>* in) {
  farm::v1::SourceUpload msg;
  if (!in->Read(&msg) || !msg.has_header()) {
    return Status::InvalidArgument("a source upload starts with its header");
  }
  const farm::v1::SourceUploadHeader h = msg.header();
  FARM_RETURN_IF_ERROR(CheckSha(h.sha256()));
  if (h.size() < 0 || h.size() > ctx.tunables.max_source_bytes) {
    return Status::InvalidArgument(
        "a source archive of " + std::to_string(h.size()) + " bytes is over farmd's limit of " +
        std::to_string(ctx.tunables.max_source_bytes) + " bytes (--max-source-bytes)");
  }
  int64_t now = ctx.clock->NowUnixMs();
  farm::v1::SourceUploadResponse resp;
  if (auto stored = StoredSource(ctx, h.sha256()); stored.ok()) {
    FARM_RETURN_IF_ERROR(ctx.store->TouchSourceArchive(h.sha256(), now));
    *resp.mutable_archive() = model::SourceArchiveToProto(*stored);
    resp.set_files(stored->files);
    return resp;  // the client's further writes fail; it reads this answer
  }
  // The bytes count against the uploader's quota from the first one on, until recorded.
  quota::Reservation reserved;
  if (ctx.quotas) {
    FARM_ASSIGN_OR_RETURN(reserved, ctx.quotas->ReserveBytes(who.name, who.role, h.size()));
  }
  FARM_ASSIGN_OR_RETURN(auto writer, ctx.blobs->BeginWrite(h.size(), h.sha256()));
  while (in->Read(&msg)) {
    if (msg.part_case() != farm::v1::SourceUpload::kData) {
      return Status::InvalidArgument("only data may follow the header");
    }
    FARM_RETURN_IF_ERROR(writer->Append(msg.data()));
  }
  archives::SourceListing listing;
  FARM_RETURN_IF_ERROR(writer->Commit([&listing](const std::string& path) -> Status {
    auto scanned = archives::ScanSourceArchive(path, archives::SourceArchiveLimits());
    if (!scanned.ok()) return scanned.status().WithContext("the source archive was refused");
    listing = std::move(scanned).value();
    return Status::Ok();
  }));
  store::SourceArchiveRow row{.sha256 = h.sha256(),
                              .size = h.size(),
                              .files = listing.files,
                              .origin = ToValidUtf8(h.origin().substr(0, kMaxOriginBytes)),
                              .uploaded_by = who.name,
                              .created_ms = now,
                              .last_used_ms = now};
  FARM_RETURN_IF_ERROR(ctx.store->RecordSourceArchive(row));
  log::Info("source archive " + h.sha256() + " (" + std::to_string(h.size()) + " bytes, " +
            std::to_string(listing.files) + " files, " + row.origin + ") uploaded by " + who.name);
  *resp.mutable_archive() = model::SourceArchiveToProto(row);
  resp.set_received_bytes(h.size());
  resp.set_files(listing.files);
  return resp;
}

}  // namespace

Result<std::string> CheckBuildSource(const ServiceContext& ctx, farm::v1::Source* source) {
  FARM_RETURN_IF_ERROR(recipe::CheckSourceIsContent(*source));
  switch (source->kind_case()) {
    case farm::v1::Source::kArchive: {
      const std::string sha = source->archive().sha256();
      FARM_RETURN_IF_ERROR(CheckSha(sha));
      auto row = StoredSource(ctx, sha);
      if (!row.ok() && row.status().code() == StatusCode::kNotFound) {
        return Status::FailedPrecondition(row.status().message() +
                                          ": upload it first (farmctl submit does)");
      }
      FARM_RETURN_IF_ERROR(row.status());
      FARM_RETURN_IF_ERROR(ctx.store->TouchSourceArchive(sha, ctx.clock->NowUnixMs()));
      bool unwrap = source->archive().unwrap_single_directory();
      *source->mutable_archive() = model::SourceArchiveToProto(*row);
      source->mutable_archive()->set_unwrap_single_directory(unwrap);
      return sha;
    }
    default:
      return std::string();
  }
}

Result<int> CollectSources(const ServiceContext& ctx, int64_t retention_ms) {
  if (retention_ms <= 0) return 0;
  int64_t cutoff = ctx.clock->NowUnixMs() - retention_ms;
  FARM_ASSIGN_OR_RETURN(auto rows, ctx.store->ListCollectableSources(cutoff, 100));
  int removed = 0;
  for (const store::SourceArchiveRow& row : rows) {
    FARM_ASSIGN_OR_RETURN(bool forgotten, ctx.store->ForgetSourceArchive(row.sha256, cutoff));
    if (!forgotten) continue;
    FARM_RETURN_IF_ERROR(ctx.blobs->Remove(row.sha256));
    log::Info("removed source archive " + row.sha256 + " (" + row.origin + "), unused since " +
              FormatRfc3339(row.last_used_ms));
    ++removed;
  }
  return removed;
}

grpc::Status ClientService::FindSource(grpc::ServerContext* call,
                                       const farm::v1::FindSourceRequest* req,
                                       farm::v1::FindSourceResponse* resp) {
  return Handle(ctx_, call, Need::kSubmitter, [&](const Principal&) -> Status {
    FARM_RETURN_IF_ERROR(CheckSha(req->sha256()));
    auto stored = StoredSource(*ctx_, req->sha256());
    if (!stored.ok()) {
      return stored.status().code() == StatusCode::kNotFound ? Status::Ok() : stored.status();
    }
    // Asking counts as a use: the archive is about to be named by a build.
    FARM_RETURN_IF_ERROR(ctx_->store->TouchSourceArchive(req->sha256(), ctx_->clock->NowUnixMs()));
    resp->set_stored(true);
    resp->set_size(stored->size);
    return Status::Ok();
  });
}

grpc::Status ClientService::UploadSource(grpc::ServerContext* call,
                                         grpc::ServerReader<farm::v1::SourceUpload>* in,
                                         farm::v1::SourceUploadResponse* resp) {
  // Archives are content-addressed and nobody's: an upload is recorded, never refused for
  // whose it is.
  audit::Entry entry{audit::Action::kSourceUpload, "source"};
  return HandleMutation(ctx_, call, Need::kSubmitter, &entry, [&](const Principal& who) -> Status {
    FARM_ASSIGN_OR_RETURN(*resp, Receive(*ctx_, who, in));
    entry.target = "source " + resp->archive().sha256();
    entry.done = std::to_string(resp->received_bytes()) + " bytes received";
    return Status::Ok();
  });
}

}  // namespace farm::api
