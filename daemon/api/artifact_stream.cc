#include "daemon/api/artifact_stream.h"

namespace farm::api {

Status StreamBlob(store::BlobStore& blobs, const store::ArtifactRow& artifact,
                  const std::function<bool(const std::string&)>& write) {
  auto reader = blobs.OpenRead(artifact.sha256);
  if (!reader.ok()) {
    return Status::DataLoss("blob of artifact " + artifact.filename +
                            " is missing: " + reader.status().message());
  }
  std::string buf;
  while (true) {
    Status read = (*reader)->Read(1 << 20, &buf);
    if (!read.ok()) {
      return Status::DataLoss("reading the blob of " + artifact.filename +
                              " failed: " + read.message());
    }
    if (buf.empty()) return Status::Ok();
    if (!write(buf)) return Status::Cancelled("client went away");
  }
}

}  // namespace farm::api
