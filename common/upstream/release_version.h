// Release versions as PEP 440 orders them, and version specifiers (">=2.8,<3", "==2.9.*",
// "~=2.8"), for what the farm reads off upstream indexes: which torch releases a watch or a
// following matrix picks. Covers the public version forms releases use (N(.N)*, a/b/rc,
// .post, .dev, a +local label, which comparison ignores) without epochs; anything else does
// not parse, and callers skip it rather than guess its order.
#ifndef FARM_COMMON_UPSTREAM_RELEASE_VERSION_H_
#define FARM_COMMON_UPSTREAM_RELEASE_VERSION_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace farm::upstream {

struct ReleaseVersion {
  std::vector<int> release;  // 2.9.0 -> {2, 9, 0}
  int pre_kind = 3;          // 0 a, 1 b, 2 rc, 3 none (a final release sorts after its pres)
  int pre_number = 0;
  int post = -1;      // -1: none
  int dev = -1;       // -1: none
  std::string local;  // "cu128" of "2.9.0+cu128"

  bool IsPrerelease() const { return pre_kind != 3 || dev >= 0; }
  // "2.9" of 2.9.0.
  std::string Minor() const;
  // The public version, normalized ("2.9.0rc1"), without the local label.
  std::string Public() const;
};

// nullopt for text that is not a version of the forms above.
std::optional<ReleaseVersion> ParseReleaseVersion(std::string_view text);

// <0, 0, >0 as PEP 440 orders a and b, local labels ignored, 2.9 == 2.9.0.
int CompareReleases(const ReleaseVersion& a, const ReleaseVersion& b);

// A comma-separated set of clauses, each OP VERSION with OP one of >=, >, <=, <, ==, !=, ~=
// (== and != also take a trailing ".*"). Empty text matches every version.
class VersionSpec {
 public:
  static Result<VersionSpec> Parse(std::string_view text);
  bool Matches(const ReleaseVersion& v) const;
  const std::string& text() const { return text_; }

 private:
  struct Clause {
    std::string op;
    ReleaseVersion version;
    bool wildcard = false;
  };
  std::vector<Clause> clauses_;
  std::string text_;
};

}  // namespace farm::upstream

#endif  // FARM_COMMON_UPSTREAM_RELEASE_VERSION_H_
