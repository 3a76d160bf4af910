// Which blob store farmd uses: the local directory under its data directory (the default)
// or an S3 bucket (--blob-store s3://bucket/prefix, --s3-endpoint, --s3-region). S3
// credentials come from the secrets (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and, for
// temporary credentials, AWS_SESSION_TOKEN, in --secrets-file or as FARM_AWS_* variables)
// or from the standard AWS_* environment variables. They are registered with the log
// redactor and never logged.
#ifndef FARM_DAEMON_STORE_BLOB_BLOB_STORE_FLAGS_H_
#define FARM_DAEMON_STORE_BLOB_BLOB_STORE_FLAGS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/flags.h"
#include "common/status.h"
#include "daemon/store/blob/blob_store.h"
#include "daemon/store/blob/sigv4.h"

namespace farm::s3 {

struct BlobStoreSettings {
  std::string url;       // "" for <data_dir>/blobs, or "s3://bucket[/prefix]"
  std::string endpoint;  // "" for https://s3.<region>.amazonaws.com
  std::string region = "us-east-1";
  int64_t cache_bytes = int64_t{2} << 30;  // local copies of S3 blobs
};

struct S3Url {
  std::string bucket;
  std::string prefix;  // without leading or trailing '/'
};

// Parses "s3://bucket[/prefix]"; InvalidArgument naming what is wrong (bucket names are
// 3-63 characters of a-z, 0-9, '.', '-'; the prefix has no empty, "." or ".." segment).
Result<S3Url> ParseS3Url(const std::string& url);

// The credentials from `secrets`, else from the environment; FailedPrecondition naming
// the keys when there are none.
Result<AwsCredentials> FindS3Credentials(const std::map<std::string, std::string>& secrets);

// farmd's flags for the blob store and the index's download redirects.
std::vector<FlagSpec> BlobStoreFlags();

// Reads those flags into `settings` and `*redirect_ttl_s` (0 when --index-redirect is
// absent); InvalidArgument naming the flag on a bad value.
Status BlobStoreSettingsFromFlags(const Flags& flags, BlobStoreSettings* settings,
                                  int64_t* redirect_ttl_s);

// Opens the store `settings` names; `secrets` as farmd read them. Says in the log which
// store it is (never a credential).
Result<std::unique_ptr<store::BlobStore>> OpenBlobStore(
    const BlobStoreSettings& settings, const std::string& data_dir,
    const std::map<std::string, std::string>& secrets);

}  // namespace farm::s3

#endif  // FARM_DAEMON_STORE_BLOB_BLOB_STORE_FLAGS_H_
