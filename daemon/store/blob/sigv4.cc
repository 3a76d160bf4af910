#include "daemon/store/blob/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <ctime>

#include "common/httpc/http_util.h"
#include "common/sha256.h"
#include "common/strings.h"

namespace farm::s3 {
namespace {

std::string Hmac(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

// Trims and collapses runs of spaces, as the canonical header value wants.
std::string CanonicalValue(std::string_view v) {
  std::string out;
  bool space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

Params SortedHeaders(const Params& headers) {
  Params sorted;
  for (const auto& [name, value] : headers)
    sorted.emplace_back(AsciiLower(name), CanonicalValue(value));
  std::sort(sorted.begin(), sorted.end());
  return sorted;
}

}  // namespace

std::string UriEncode(std::string_view text, bool keep_slash) {
  // SigV4's encoding is RFC 3986's: everything but the unreserved characters.
  return keep_slash ? httpc::EncodePath(text) : httpc::PercentEncode(text);
}

std::string AmzDate(int64_t unix_s) {
  time_t t = static_cast<time_t>(unix_s);
  struct tm tm_utc;
  gmtime_r(&t, &tm_utc);
  char buf[32];
  strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm_utc);
  return buf;
}

std::string CredentialScope(std::string_view amz_date, std::string_view region,
                            std::string_view service) {
  return std::string(amz_date.substr(0, 8)) + "/" + std::string(region) + "/" +
         std::string(service) + "/aws4_request";
}

std::string CanonicalQuery(const Params& query) {
  Params encoded;
  for (const auto& [k, v] : query) encoded.emplace_back(UriEncode(k, false), UriEncode(v, false));
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [k, v] : encoded) out += (out.empty() ? "" : "&") + k + "=" + v;
  return out;
}

std::string SignedHeaders(const Params& headers) {
  std::string out;
  for (const auto& [name, value] : SortedHeaders(headers)) out += (out.empty() ? "" : ";") + name;
  return out;
}

std::string CanonicalRequest(const SignableRequest& r) {
  std::string headers;
  for (const auto& [name, value] : SortedHeaders(r.headers)) headers += name + ":" + value + "\n";
  return r.method + "\n" + UriEncode(r.path, true) + "\n" + CanonicalQuery(r.query) + "\n" +
         headers + "\n" + SignedHeaders(r.headers) + "\n" + r.payload_sha256;
}

std::string StringToSign(std::string_view amz_date, std::string_view scope,
                         std::string_view canonical_request) {
  return "AWS4-HMAC-SHA256\n" + std::string(amz_date) + "\n" + std::string(scope) + "\n" +
         Sha256Hex(canonical_request);
}

std::string Signature(std::string_view secret_access_key, std::string_view amz_date,
                      std::string_view region, std::string_view service,
                      std::string_view string_to_sign) {
  std::string key = Hmac("AWS4" + std::string(secret_access_key), amz_date.substr(0, 8));
  key = Hmac(key, region);
  key = Hmac(key, service);
  key = Hmac(key, "aws4_request");
  return ToHex(Hmac(key, string_to_sign));
}

std::string SignWithHeader(SignableRequest* request, const AwsCredentials& credentials,
                           std::string_view region, std::string_view service, int64_t unix_s) {
  std::string date = AmzDate(unix_s);
  request->headers.emplace_back("x-amz-date", date);
  request->headers.emplace_back("x-amz-content-sha256", request->payload_sha256);
  if (!credentials.session_token.empty()) {
    request->headers.emplace_back("x-amz-security-token", credentials.session_token);
  }
  std::string scope = CredentialScope(date, region, service);
  std::string to_sign = StringToSign(date, scope, CanonicalRequest(*request));
  return "AWS4-HMAC-SHA256 Credential=" + credentials.access_key_id + "/" + scope +
         ", SignedHeaders=" + SignedHeaders(request->headers) +
         ", Signature=" + Signature(credentials.secret_access_key, date, region, service, to_sign);
}

void Presign(SignableRequest* request, const AwsCredentials& credentials, std::string_view region,
             std::string_view service, int64_t unix_s, int64_t expires_s) {
  std::string date = AmzDate(unix_s);
  std::string scope = CredentialScope(date, region, service);
  request->payload_sha256 = kUnsignedPayload;
  request->query.emplace_back("X-Amz-Algorithm", "AWS4-HMAC-SHA256");
  request->query.emplace_back("X-Amz-Credential", credentials.access_key_id + "/" + scope);
  request->query.emplace_back("X-Amz-Date", date);
  request->query.emplace_back("X-Amz-Expires", std::to_string(expires_s));
  if (!credentials.session_token.empty()) {
    request->query.emplace_back("X-Amz-Security-Token", credentials.session_token);
  }
  request->query.emplace_back("X-Amz-SignedHeaders", SignedHeaders(request->headers));
  std::string to_sign = StringToSign(date, scope, CanonicalRequest(*request));
  request->query.emplace_back(
      "X-Amz-Signature", Signature(credentials.secret_access_key, date, region, service, to_sign));
}

}  // namespace farm::s3
