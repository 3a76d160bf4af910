#include "daemon/store/blob/blob_store_flags.h"

#include <cstdlib>

#include "common/httpc/curl_http_client.h"
#include "common/log.h"
#include "daemon/store/blob/s3_blob_store.h"

namespace farm::s3 {
namespace {

bool ValidBucket(const std::string& b) {
  if (b.size() < 3 || b.size() > 63) return false;
  for (char c : b) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-')) return false;
  }
  return b.front() != '.' && b.front() != '-' && b.back() != '.' && b.back() != '-';
}

std::string Lookup(const std::map<std::string, std::string>& secrets, const std::string& key) {
  if (auto it = secrets.find(key); it != secrets.end() && !it->second.empty()) return it->second;
  const char* env = std::getenv(key.c_str());
  return env != nullptr ? env : "";
}

}  // namespace

std::vector<FlagSpec> BlobStoreFlags() {
  return {
      {"blob-store", "s3://BUCKET[/PREFIX]",
       "keep wheels and source archives in this S3 bucket (default: DATA_DIR/blobs)"},
      {"s3-endpoint", "URL", "S3 endpoint (default https://s3.REGION.amazonaws.com)"},
      {"s3-region", "REGION", "the bucket's region, part of every signature (default us-east-1)"},
      {"blob-cache-bytes", "N", "local copies of S3 blobs kept at most (default 2 GiB)"},
      {"index-redirect", "", "answer index downloads with presigned S3 URLs (302)"},
      {"index-redirect-ttl-s", "S", "how long a presigned URL is valid (default 900)"},
  };
}

Status BlobStoreSettingsFromFlags(const Flags& flags, BlobStoreSettings* settings,
                                  int64_t* redirect_ttl_s) {
  settings->url = flags.Get("blob-store");
  settings->endpoint = flags.Get("s3-endpoint");
  settings->region = flags.Get("s3-region", settings->region);
  FARM_ASSIGN_OR_RETURN(settings->cache_bytes,
                        flags.GetInt("blob-cache-bytes", settings->cache_bytes));
  FARM_ASSIGN_OR_RETURN(int64_t ttl, flags.GetInt("index-redirect-ttl-s", 900));
  if (ttl < 1 || ttl > 604800) {
    return Status::InvalidArgument("--index-redirect-ttl-s must be from 1 to 604800 seconds");
  }
  *redirect_ttl_s = flags.Has("index-redirect") ? ttl : 0;
  if (!settings->url.empty()) FARM_RETURN_IF_ERROR(ParseS3Url(settings->url).status());
  return Status::Ok();
}

Result<S3Url> ParseS3Url(const std::string& url) {
  if (!url.starts_with("s3://")) {
    return Status::InvalidArgument("--blob-store takes s3://bucket[/prefix], not \"" +
                                   url.substr(0, 100) + "\"");
  }
  std::string rest = url.substr(5);
  size_t slash = rest.find('/');
  S3Url parsed{rest.substr(0, slash), slash == std::string::npos ? "" : rest.substr(slash + 1)};
  while (!parsed.prefix.empty() && parsed.prefix.back() == '/') parsed.prefix.pop_back();
  if (!ValidBucket(parsed.bucket)) {
    return Status::InvalidArgument("\"" + parsed.bucket.substr(0, 100) +
                                   "\" is not an S3 bucket name (3-63 characters of a-z, 0-9, "
                                   "'.' and '-')");
  }
  size_t start = 0;
  while (!parsed.prefix.empty()) {
    size_t end = parsed.prefix.find('/', start);
    std::string segment = parsed.prefix.substr(start, end - start);
    if (segment.empty() || segment == "." || segment == "..") {
      return Status::InvalidArgument("the key prefix \"" + parsed.prefix.substr(0, 200) +
                                     "\" has an empty, \".\" or \"..\" segment");
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return parsed;
}

Result<AwsCredentials> FindS3Credentials(const std::map<std::string, std::string>& secrets) {
  AwsCredentials c{.access_key_id = Lookup(secrets, "AWS_ACCESS_KEY_ID"),
                   .secret_access_key = Lookup(secrets, "AWS_SECRET_ACCESS_KEY"),
                   .session_token = Lookup(secrets, "AWS_SESSION_TOKEN")};
  if (c.access_key_id.empty() || c.secret_access_key.empty()) {
    return Status::FailedPrecondition(
        "an S3 blob store needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (in --secrets-file, "
        "or in the environment)");
  }
  log::RegisterSecret(c.secret_access_key);
  if (!c.session_token.empty()) log::RegisterSecret(c.session_token);
  return c;
}

Result<std::unique_ptr<store::BlobStore>> OpenBlobStore(
    const BlobStoreSettings& settings, const std::string& data_dir,
    const std::map<std::string, std::string>& secrets) {
  if (settings.url.empty()) return store::BlobStore::Open(data_dir + "/blobs");
  FARM_ASSIGN_OR_RETURN(S3Url url, ParseS3Url(settings.url));
  FARM_ASSIGN_OR_RETURN(AwsCredentials credentials, FindS3Credentials(secrets));
  std::string endpoint = settings.endpoint.empty()
                             ? "https://s3." + settings.region + ".amazonaws.com"
                             : settings.endpoint;
  if (!endpoint.starts_with("https://") && !endpoint.starts_with("http://")) {
    return Status::InvalidArgument("--s3-endpoint must be an http:// or https:// URL");
  }
  if (settings.cache_bytes < 0) return Status::InvalidArgument("--blob-cache-bytes is negative");
  log::Info("blobs in s3://" + url.bucket + (url.prefix.empty() ? "" : "/" + url.prefix) + " at " +
            endpoint + " (region " + settings.region + "), local cache of " +
            std::to_string(settings.cache_bytes >> 20) + " MiB");
  return OpenS3BlobStore(S3Config{.endpoint = endpoint,
                                  .region = settings.region,
                                  .bucket = url.bucket,
                                  .credentials = std::move(credentials)},
                         S3BlobStoreOptions{.prefix = url.prefix,
                                            .work_dir = data_dir + "/blob-cache",
                                            .cache_bytes = settings.cache_bytes},
                         std::make_unique<httpc::CurlHttpClient>(), RealClock(),
                         httpc::DefaultSleeper());
}

}  // namespace farm::s3
