// Streaming a stored wheel to a caller (farmctl download, a worker validating it) in chunks
// of 1 MiB, so no wheel is ever held whole in memory.
#ifndef FARM_DAEMON_API_ARTIFACT_STREAM_H_
#define FARM_DAEMON_API_ARTIFACT_STREAM_H_

#include <functional>
#include <string>

#include "common/status.h"
#include "daemon/store/blob/blob_store.h"
#include "daemon/store/store.h"

namespace farm::api {

// Calls `write` with successive chunks of the artifact's blob until it is sent or `write`
// returns false (the caller went away: Cancelled). DataLoss when the blob is missing.
Status StreamBlob(store::BlobStore& blobs, const store::ArtifactRow& artifact,
                  const std::function<bool(const std::string&)>& write);

}  // namespace farm::api

#endif  // FARM_DAEMON_API_ARTIFACT_STREAM_H_
