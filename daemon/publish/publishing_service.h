// PublishingService: the publishing side of farmd, assembled in one object: one libcurl
// client, a rate-limiting httpc::RetryingHttpClient per remote service, the GitHub and Hub
// clients (only for the tokens farmd has), and the Publisher loop over the outbox.
// FarmServer starts it after the store is open and stops it before the store closes.
//
// The tokens are taken from the secrets map (daemon/auth/secrets_file.h), registered with
// the log redactor, and held only by the clients; nothing here writes them anywhere.
//
// Thread-safety: Start/Stop from one thread; the loop runs on its own thread.
#ifndef FARM_DAEMON_PUBLISH_PUBLISHING_SERVICE_H_
#define FARM_DAEMON_PUBLISH_PUBLISHING_SERVICE_H_

#include <map>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "common/wheel/upload_limits.h"
#include "daemon/store/blob/blob_store.h"
#include "daemon/store/store.h"

namespace farm::attest {
class Attestor;
}  // namespace farm::attest

namespace farm::publish {

struct PublishingConfig {
  std::map<std::string, std::string> secrets;  // GITHUB_TOKEN, HF_TOKEN
  std::string github_api = "https://api.github.com";
  std::string hf_endpoint = "https://huggingface.co";
  bool publish_pending_hardware = false;
  int64_t interval_ms = 1000;
  std::string work_dir;  // scratch for relabelled wheels, under farmd's data directory
  // Each wheel goes out with its .intoto.jsonl, releases and Hub folders with a signed
  // SHA256SUMS (needs an attestor).
  bool with_provenance = true;
  // The largest file each destination takes (PublisherOptions).
  int64_t github_max_asset_bytes = wheel::kGitHubMaxAssetBytes;
  int64_t hf_max_file_bytes = wheel::kHubMaxFileBytes;
};

class PublishingService {
 public:
  // Builds the clients and starts the publisher loop. Fails only when work_dir cannot be
  // made. With `attestor`, each wheel goes out with its signed provenance and each release
  // and Hub folder with a signed SHA256SUMS (docs/provenance.md).
  static Result<std::unique_ptr<PublishingService>> Start(const PublishingConfig& config,
                                                          store::Store* store,
                                                          store::BlobStore* blobs,
                                                          const Clock* clock,
                                                          attest::Attestor* attestor = nullptr);
  ~PublishingService();
  // Ends rate-limit waits at once and joins the loop (after the call in flight returns).
  void Stop();

 private:
  struct Impl;
  explicit PublishingService(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace farm::publish

#endif  // FARM_DAEMON_PUBLISH_PUBLISHING_SERVICE_H_
