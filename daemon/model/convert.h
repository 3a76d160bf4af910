// Conversions between store rows and farm.v1 messages. Pure functions; a blob that fails
// to parse yields an empty message (the store only ever holds what farmd serialized).
#ifndef FARM_DAEMON_MODEL_CONVERT_H_
#define FARM_DAEMON_MODEL_CONVERT_H_

#include <string>

#include "daemon/store/store.h"
#include "farm/v1/client.pb.h"
#include "farm/v1/types.pb.h"

namespace farm::model {

farm::v1::Build BuildToProto(const store::BuildRow& row);
farm::v1::Job JobToProto(const store::JobRow& row);
farm::v1::Attempt AttemptToProto(const store::AttemptRow& row);
farm::v1::Artifact ArtifactToProto(const store::ArtifactRow& row);
farm::v1::LogLine LogLineToProto(int64_t job_id, int attempt, const store::LogLineRow& row);
farm::v1::WorkerInfo WorkerToProto(const store::WorkerRow& row);
farm::v1::RecipeName NameToProto(const store::RecipeNameRow& row);
farm::v1::AuditRecord AuditToProto(const store::AuditRow& row);
// Secrets in error text are redacted (log::Redact), as in logs.
farm::v1::Host HostToProto(const store::HostRow& row);
farm::v1::Publication PublicationToProto(const store::PublicationRow& row);
farm::v1::CachedFile CachedFileToProto(const store::UpstreamPreloadRow& row);
farm::v1::SourceArchive SourceArchiveToProto(const store::SourceArchiveRow& row);

template <typename Msg>
Msg ParseBlob(const std::string& blob) {
  Msg m;
  m.ParseFromString(blob);
  return m;
}

}  // namespace farm::model

#endif  // FARM_DAEMON_MODEL_CONVERT_H_
