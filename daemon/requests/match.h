// Whether a recipe can build the cell a request asks for, and which axes of the recipe's
// matrix express it (docs/requests.md, "Matching"). A refusal is FailedPrecondition whose
// message is the reason the requester reads:
//   - the recipe builds another version, or needs other recipes' wheels;
//   - the torch is not one the farm knows (arch.h's torch/CUDA table, or the recipe's own
//     torch_cuda entries), or the recipe builds for other torches, CUDAs, Pythons or
//     platforms;
//   - no CUDA of the recipe compiles for the GPU's compute capability, or no arch list of
//     the recipe runs on it;
//   - the matrix's own rules drop the cell (its reasons, as farmctl submit prints them).
// Pure; thread-safe.
#ifndef FARM_DAEMON_REQUESTS_MATCH_H_
#define FARM_DAEMON_REQUESTS_MATCH_H_

#include "common/status.h"
#include "daemon/requests/spec.h"
#include "farm/v1/types.pb.h"

namespace farm::requests {

struct Matched {
  farm::v1::MatrixAxes axes;  // the build's matrix: one value on each axis the recipe has
  farm::v1::MatrixCell cell;  // the cell those axes expand to that runs on the GPU
};

// Matches checked `spec` against `recipe` (the newest the farm stored under its name).
Result<Matched> MatchRecipe(const farm::v1::Recipe& recipe, const Spec& spec);

}  // namespace farm::requests

#endif  // FARM_DAEMON_REQUESTS_MATCH_H_
