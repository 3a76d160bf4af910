// Whether an environment's pins are a complete lock. The provisioner installs the pinned
// wheels with pip --no-index from a wheelhouse of exactly what was pinned, so every
// requirement a pinned wheel declares (METADATA Requires-Dist, evaluated for the
// environment's Python and platform, with the extras asked of it) must be satisfied by a
// pin; otherwise pip fails late with "No matching distribution", or a requirement gets
// resolved by something nobody pinned. This check runs before anything but metadata is
// fetched, and names, for each requirement the pins miss or contradict, the exact line to
// add ("nvidia-cublas-cu12==12.8.4.1"). Pure functions; safe from any thread.
#ifndef FARM_WORKER_ENV_PIN_CHECK_H_
#define FARM_WORKER_ENV_PIN_CHECK_H_

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/upstream/pep508.h"

namespace farm::env {

// One pinned distribution and what its METADATA requires.
struct PinnedDist {
  std::string name;     // as pinned: "torch"
  std::string version;  // as pinned: "2.8.0+cu128"
  std::vector<std::string> requires_dist;
};

// The version to pin for `dep` (the newest the index has that satisfies it), or "" when
// none is known. May be null.
using PinSuggester = std::function<std::string(const upstream::DependencySpec& dep)>;

struct PinProblem {
  std::string requirer;     // "torch 2.8.0+cu128"
  std::string requirement;  // the Requires-Dist value as written
  std::string pinned;       // "setuptools==60.0" for a contradicting pin; "" for a missing one
  std::string line;         // the pin to write ("nvidia-cublas-cu12==12.8.4.1"); "" if unknown
  std::string why;          // for a requirement that could not be evaluated
};

// The requirements of `dists` (every one is installed) that the pins do not satisfy, in
// the order found (the first dist's first). A requirement with extras makes the required
// dist's requirements for those extras count too.
std::vector<PinProblem> CheckPins(const std::vector<PinnedDist>& dists,
                                  const upstream::MarkerEnv& env, const PinSuggester& suggest);

// "add nvidia-cublas-cu12==12.8.4.1 (torch 2.8.0+cu128 requires nvidia-cublas-cu12==12.8.4.1;
// platform_system == "Linux")" and the like, one per line.
std::string DescribeProblems(const std::vector<PinProblem>& problems);

// The Requires-Dist values of a METADATA file.
std::vector<std::string> RequiresDistOf(const std::string& metadata);

}  // namespace farm::env

#endif  // FARM_WORKER_ENV_PIN_CHECK_H_
