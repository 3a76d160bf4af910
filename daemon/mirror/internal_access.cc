#include "daemon/mirror/internal_access.h"

#include <openssl/crypto.h>

#include "common/log.h"
#include "common/provenance/base64.h"
#include "common/sha256.h"

namespace farm::mirror {
namespace {

bool SameSecret(std::string_view got, const std::string& want) {
  return got.size() == want.size() && CRYPTO_memcmp(got.data(), want.data(), want.size()) == 0;
}

bool StartsWithNoCase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[i])) !=
        std::tolower(static_cast<unsigned char>(prefix[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::shared_ptr<const InternalAccess> InternalAccess::Generate() {
  std::string secret = RandomHex(32);
  log::RegisterSecret(secret);
  return std::shared_ptr<const InternalAccess>(new InternalAccess(std::move(secret)));
}

bool InternalAccess::Accepts(std::string_view authorization) const {
  if (StartsWithNoCase(authorization, "Bearer ")) {
    return SameSecret(authorization.substr(7), secret_);
  }
  Result<std::string> password = BasicAuthPassword(authorization);
  return password.ok() && SameSecret(*password, secret_);
}

Result<std::string> InternalAccess::IndexUrl(const std::string& base_url,
                                             const std::string& index) const {
  size_t scheme_end = base_url.find("://");
  std::string scheme = scheme_end == std::string::npos ? "" : base_url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") {
    return Status::InvalidArgument("not an http(s) base URL: " + base_url.substr(0, 200));
  }
  std::string rest = base_url.substr(scheme_end + 3);
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  return scheme + "://farmd:" + secret_ + "@" + rest + "/upstream/pypi/" + index + "/simple/";
}

Result<std::string> BasicAuthPassword(std::string_view authorization) {
  if (!StartsWithNoCase(authorization, "Basic ")) {
    return Status::NotFound("not a Basic credential");
  }
  std::string_view encoded = authorization.substr(6);
  while (!encoded.empty() && encoded.front() == ' ') encoded.remove_prefix(1);
  if (encoded.size() > 4096) return Status::InvalidArgument("a Basic credential too long");
  FARM_ASSIGN_OR_RETURN(std::string pair, provenance::Base64Decode(encoded));
  size_t colon = pair.find(':');
  if (colon == std::string::npos) return Status::InvalidArgument("a Basic credential without ':'");
  return pair.substr(colon + 1);
}

}  // namespace farm::mirror
