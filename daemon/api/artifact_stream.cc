#include "daemon/api/artifact_stream.h"

#include <cstdio>
#include <memory>

namespace farm::api {

Status StreamBlob(const store::BlobStore& blobs, const store::ArtifactRow& artifact,
                  const std::function<bool(const std::string&)>& write) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(fopen(blobs.PathFor(artifact.sha256).c_str(), "rb"),
                                          fclose);
  if (!f) return Status::DataLoss("blob of artifact " + artifact.filename + " is missing");
  std::string buf(1 << 20, '\0');
  for (size_t n; (n = fread(buf.data(), 1, buf.size(), f.get())) > 0;) {
    if (!write(std::string(buf.data(), n))) return Status::Cancelled("client went away");
  }
  if (ferror(f.get()))
    return Status::DataLoss("reading the blob of " + artifact.filename + " failed");
  return Status::Ok();
}

}  // namespace farm::api
