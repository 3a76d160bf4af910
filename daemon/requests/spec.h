// What a wheel request asks for (docs/requests.md): a package, a version or the newest the
// farm's recipe builds, and the setup of the machine that needs the wheel. Every field
// comes from the network and is checked here before anything reads or stores it.
// Pure; thread-safe.
#ifndef FARM_DAEMON_REQUESTS_SPEC_H_
#define FARM_DAEMON_REQUESTS_SPEC_H_

#include <string>

#include "common/status.h"

namespace farm::requests {

inline constexpr size_t kMaxFieldBytes = 64;

struct Spec {
  std::string package;             // a PEP 508 name; PEP 503 normalised by CheckSpec
  std::string version;             // PEP 440; "" for the newest the recipe builds
  std::string python;              // "3.12"
  std::string torch;               // "2.8" or "2.8.1"; "" with no torch installed
  std::string cuda;                // "12.8"; "" without CUDA (no torch, or a CPU torch)
  std::string compute_capability;  // "8.9": the GPU's, one the farm knows
  std::string platform;            // a wheel platform tag: "linux_x86_64"
};

// Checks every field of `spec` and normalises the package name (and a torch given as a
// release with a local label, "2.8.0+cu128", loses the label). InvalidArgument naming the
// field and why for anything else: an empty required field, more than kMaxFieldBytes, a
// character no such value holds, a compute capability the farm does not know.
Status CheckSpec(Spec* spec);

// The digest identical requests share: SHA-256 over the checked fields, each
// length-prefixed (64 hex digits).
std::string SpecKey(const Spec& spec);

}  // namespace farm::requests

#endif  // FARM_DAEMON_REQUESTS_SPEC_H_
