// InternalAccess: how farmd's own processes use its pull-through routes. farmd runs pip
// (the lock resolver) against its /upstream/pypi/<index>/simple/ pages, and pip cannot
// send a bearer token, only HTTP Basic credentials taken from the index URL's userinfo.
// farmd makes one random secret at start (never stored, never logged: it is registered
// with the log redactor), which the /upstream/ routes accept as a worker's credential,
// as a bearer token or as the password of HTTP Basic (any user name).
//
// The composition root makes one InternalAccess, hands it to the routes (DashboardDeps)
// and gives the resolver the URL to run pip with:
//
//   auto access = mirror::InternalAccess::Generate();
//   std::string index = access->IndexUrl("http://" + dashboard->address(), "cu128");
//   // -> "http://farmd:<secret>@127.0.0.1:8080/upstream/pypi/cu128/simple/"
//
// A process given that URL holds what a worker holds on /upstream/ (pages, files, and
// downloads of files nobody provisioned yet) and nothing else of the farm. The URL is a
// secret: keep it out of command lines other users can read (pass it through pip's
// environment, PIP_INDEX_URL). Immutable after Generate; thread-safe.
#ifndef FARM_DAEMON_MIRROR_INTERNAL_ACCESS_H_
#define FARM_DAEMON_MIRROR_INTERNAL_ACCESS_H_

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace farm::mirror {

class InternalAccess {
 public:
  // A fresh secret of 32 random bytes (hex), registered with the log redactor.
  static std::shared_ptr<const InternalAccess> Generate();

  // Whether an Authorization header value carries the secret: "Bearer <secret>", or
  // "Basic " + base64("<any user>:<secret>"). Compared in constant time.
  bool Accepts(std::string_view authorization) const;

  // The index URL for pip: `base_url` ("http://127.0.0.1:8080", farmd's dashboard,
  // https when it serves TLS) + "/upstream/pypi/<index>/simple/", with the user "farmd"
  // and the secret as its password. InvalidArgument for a base that is not http(s).
  Result<std::string> IndexUrl(const std::string& base_url, const std::string& index) const;

 private:
  explicit InternalAccess(std::string secret) : secret_(std::move(secret)) {}
  std::string secret_;
};

// The password of an HTTP Basic Authorization header value ("Basic " + base64(user:pass));
// NotFound when the value is no Basic credential, InvalidArgument when it does not decode.
Result<std::string> BasicAuthPassword(std::string_view authorization);

}  // namespace farm::mirror

#endif  // FARM_DAEMON_MIRROR_INTERNAL_ACCESS_H_
