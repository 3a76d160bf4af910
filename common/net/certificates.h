// A farm's own certificate authority: a CA certificate and key, and certificates it issues
// for farmd (server, with the names and addresses it is reached by) and for workers
// (client, for mTLS). Keys are ECDSA P-256, signatures SHA-256, files PEM; keys are
// written with mode 0600. Used by `farmctl ca` and by the tests. OpenSSL's libcrypto;
// thread-safe.
#ifndef FARM_COMMON_NET_CERTIFICATES_H_
#define FARM_COMMON_NET_CERTIFICATES_H_

#include <string>
#include <vector>

#include "common/status.h"

namespace farm::net {

// Creates <dir>/ca.pem and <dir>/ca.key (dir made with mode 0700 when missing), valid for
// `days`. AlreadyExists, changing nothing, when <dir>/ca.key exists.
Status CreateCa(const std::string& dir, const std::string& name, int days);

struct CertRequest {
  std::string name;                // the subject's common name
  std::vector<std::string> hosts;  // DNS names or IP addresses (server certificates)
  bool server = false;             // extended key usage serverAuth
  bool client = false;             // extended key usage clientAuth
  int days = 825;
};

// Issues a certificate signed by the CA in `ca_dir` into <out_dir>/<name>.pem and
// <out_dir>/<name>.key. InvalidArgument for a request without a use, a server certificate
// without hosts, or a name that is no plain file name; NotFound without a CA.
Status IssueCertificate(const std::string& ca_dir, const CertRequest& request,
                        const std::string& out_dir);

}  // namespace farm::net

#endif  // FARM_COMMON_NET_CERTIFICATES_H_
