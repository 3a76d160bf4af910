// What torch a wheel says it needs, read from its METADATA, and whether a given torch
// release satisfies it: the package index lists a wheel in a torch view only when its
// requirement admits that torch, so pip never installs an extension next to a torch it was
// not built for (`undefined symbol` at import) nor replaces the user's torch to satisfy it.
// Versions and specifiers are PEP 440's (common/upstream/release_version.h), never string
// comparisons. Pure; thread-safe.
#ifndef FARM_DAEMON_HTTP_INDEX_TORCH_REQUIREMENT_H_
#define FARM_DAEMON_HTTP_INDEX_TORCH_REQUIREMENT_H_

#include <string>
#include <string_view>
#include <vector>

#include "common/upstream/release_version.h"

namespace farm::http {

struct TorchRequirement {
  // METADATA has a Requires-Dist for torch that applies without extras.
  bool present = false;
  // Every such row parsed; a wheel whose requirement does not parse admits no torch.
  bool valid = true;
  // "torch==2.8.*", "torch>=2.9", "torch>=2.8,<3" (rows joined by ","); "" when absent.
  std::string text;
  std::vector<upstream::VersionSpec> specs;
  // The versions the clauses name ("2.8" of ==2.8.*, "2.9" of >=2.9): torch releases the
  // farm knows wheels for, which the directory offers views of.
  std::vector<upstream::ReleaseVersion> named;
};

// The torch requirement of a METADATA text: its `Requires-Dist` headers (before the body)
// naming torch (PEP 503 normalized), in either form ("torch>=2.9", "torch (>=2.9)"), with
// extras allowed. A row whose marker names an `extra` applies only with that extra and is
// skipped; any other marker is taken as applying (a torch view must not offer a wheel that
// may need another torch). A URL requirement, `===`, or an unparsable specifier makes the
// requirement invalid. At most 32 rows are read.
TorchRequirement TorchRequirementOf(std::string_view metadata);

// Whether a torch of version `torch` may be installed next to the wheel: true without a
// requirement, false for an invalid one, else every row's specifier matches (the local
// label, "+cu128", is ignored as PEP 440 says for specifiers without one).
bool AdmitsTorch(const TorchRequirement& requirement, const upstream::ReleaseVersion& torch);

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_INDEX_TORCH_REQUIREMENT_H_
