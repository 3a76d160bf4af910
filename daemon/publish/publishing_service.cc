#include "daemon/publish/publishing_service.h"

#include "common/fs.h"
#include "common/httpc/curl_http_client.h"
#include "common/log.h"
#include "daemon/publish/outbox.h"

namespace farm::publish {

struct PublishingService::Impl {
  httpc::CurlHttpClient curl;
  StoppableSleeper sleeper;
  std::unique_ptr<httpc::RetryingHttpClient> github_http;
  std::unique_ptr<httpc::RetryingHttpClient> hf_http;
  std::unique_ptr<GitHubReleasesClient> github_client;
  std::unique_ptr<HfHubClient> hf_client;
  std::unique_ptr<GitHubClientTarget> github;
  std::unique_ptr<HfClientTarget> hf;
  std::unique_ptr<Publisher> publisher;
};

namespace {

std::string Secret(const PublishingConfig& config, const std::string& key) {
  auto it = config.secrets.find(key);
  return it == config.secrets.end() ? "" : it->second;
}

}  // namespace

Result<std::unique_ptr<PublishingService>> PublishingService::Start(const PublishingConfig& config,
                                                                    store::Store* store,
                                                                    store::BlobStore* blobs,
                                                                    const Clock* clock,
                                                                    attest::Attestor* attestor) {
  FARM_RETURN_IF_ERROR(fs::MakeDirs(config.work_dir, 0700));
  auto impl = std::make_unique<Impl>();
  const std::string github_token = Secret(config, "GITHUB_TOKEN");
  const std::string hf_token = Secret(config, "HF_TOKEN");
  if (!github_token.empty()) {
    impl->github_http = std::make_unique<httpc::RetryingHttpClient>(
        impl->curl, *clock, impl->sleeper, httpc::GitHubRetryDefaults());
    impl->github_client = std::make_unique<GitHubReleasesClient>(
        *impl->github_http, GitHubOptions{.api_base = config.github_api, .token = github_token});
    impl->github = std::make_unique<GitHubClientTarget>(*impl->github_client);
  }
  if (!hf_token.empty()) {
    impl->hf_http = std::make_unique<httpc::RetryingHttpClient>(impl->curl, *clock, impl->sleeper,
                                                                httpc::HfRetryDefaults());
    impl->hf_client = std::make_unique<HfHubClient>(
        *impl->hf_http, HfOptions{.endpoint = config.hf_endpoint, .token = hf_token});
    impl->hf = std::make_unique<HfClientTarget>(*impl->hf_client);
  }
  PublisherOptions options;
  options.publish_pending_hardware = config.publish_pending_hardware;
  options.interval_ms = config.interval_ms;
  options.work_dir = config.work_dir;
  options.github_max_asset_bytes = config.github_max_asset_bytes;
  options.hf_max_file_bytes = config.hf_max_file_bytes;
  impl->publisher = std::make_unique<Publisher>(
      PublisherDeps{store, blobs, clock, impl->github.get(), impl->hf.get(),
                    config.with_provenance ? attestor : nullptr},
      options);
  impl->publisher->Start();
  log::Info(std::string("publisher started: GitHub ") +
            (impl->github ? "at " + config.github_api : "off (no GITHUB_TOKEN)") + ", Hub " +
            (impl->hf ? "at " + config.hf_endpoint : "off (no HF_TOKEN)") +
            (config.publish_pending_hardware ? ", publishing wheels pending hardware" : ""));
  return std::unique_ptr<PublishingService>(new PublishingService(std::move(impl)));
}

PublishingService::PublishingService(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

PublishingService::~PublishingService() { Stop(); }

void PublishingService::Stop() {
  impl_->sleeper.Stop();
  impl_->publisher->Stop();
}

}  // namespace farm::publish
