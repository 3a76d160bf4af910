#include "common/wheel/sm_families.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>

namespace farm::wheel {
namespace {

// "80" -> 8.0, "121" -> 12.1: the digits of a cc as sm_XY spells it; nullopt unless known.
std::optional<arch::Version> KnownCc(std::string_view digits) {
  if (digits.size() < 2 || digits.size() > 3 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(c); })) {
    return std::nullopt;
  }
  arch::Version v{std::stoi(std::string(digits.substr(0, digits.size() - 1))), digits.back() - '0'};
  for (const auto& known : arch::KnownCcs()) {
    if (known.cc == v) return v;
  }
  return std::nullopt;
}

std::string CcDigits(const arch::Version& v) {
  return std::to_string(v.major) + std::to_string(v.minor);
}

}  // namespace

std::string SmFamily::Label() const {
  return "sm" + CcDigits(lo) + (hi == lo ? "" : "to" + CcDigits(hi));
}

Result<SmFamily> ParseFamily(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("family \"" + std::string(text) + "\" " + why +
                                   " (write sm<cc> or sm<cc>-<cc>, e.g. sm80-89, sm90, sm120-121)");
  };
  if (!text.starts_with("sm")) return bad("does not start with \"sm\"");
  std::string_view rest = text.substr(2);
  size_t dash = rest.find('-');
  auto lo = KnownCc(rest.substr(0, dash));
  if (!lo) return bad("does not name a known compute capability");
  SmFamily f{std::string(text), *lo, *lo};
  if (dash == rest.npos) return f;
  auto hi = KnownCc(rest.substr(dash + 1));
  if (!hi) return bad("does not end in a known compute capability");
  if (*hi < *lo) return bad("ends before it starts");
  f.hi = *hi;
  return f;
}

Result<std::vector<SmFamily>> ParseFamilies(
    const google::protobuf::RepeatedPtrField<std::string>& names) {
  std::vector<SmFamily> out;
  for (const std::string& name : names) {
    FARM_ASSIGN_OR_RETURN(SmFamily f, ParseFamily(name));
    for (const SmFamily& other : out) {
      if (f.lo <= other.hi && other.lo <= f.hi) {
        return Status::InvalidArgument("families \"" + other.name + "\" and \"" + f.name +
                                       "\" share a compute capability; each GPU belongs to one");
      }
    }
    out.push_back(std::move(f));
  }
  return out;
}

Result<std::vector<std::string>> SplitArchList(const std::string& arch_list,
                                               const std::vector<SmFamily>& families) {
  if (families.empty()) return std::vector<std::string>{arch_list};
  FARM_ASSIGN_OR_RETURN(std::vector<arch::Target> targets, arch::ParseArchList(arch_list));
  std::vector<std::vector<arch::Target>> groups(families.size());
  for (const arch::Target& t : targets) {
    auto f = std::find_if(families.begin(), families.end(),
                          [&](const SmFamily& family) { return family.Holds(t.cc()); });
    if (f == families.end()) {
      std::string names;
      for (const SmFamily& g : families) names += (names.empty() ? "" : ", ") + g.name;
      return Status::InvalidArgument(arch::DisplayName(t) + " of \"" + arch_list +
                                     "\" is in none of the families " + names);
    }
    groups[f - families.begin()].push_back(t);
  }
  std::vector<std::string> out;
  for (const auto& group : groups) {
    if (!group.empty()) out.push_back(arch::FormatArchList(group));
  }
  return out;
}

const SmFamily* FamilyServed(const std::vector<arch::Image>& images,
                             const std::vector<SmFamily>& families) {
  if (images.empty()) return nullptr;
  std::vector<arch::Image> sass;
  for (const arch::Image& i : images) {
    if (i.kind == arch::Image::Kind::kSass) sass.push_back(i);
  }
  std::vector<arch::Version> runs_on = arch::RunsOn(sass);
  for (const SmFamily& f : families) {
    bool inside = std::all_of(images.begin(), images.end(), [&](const arch::Image& i) {
      return f.Holds({i.major, i.minor});
    });
    bool covers = std::all_of(arch::KnownCcs().begin(), arch::KnownCcs().end(), [&](const auto& k) {
      return !f.Holds(k.cc) || std::find(runs_on.begin(), runs_on.end(), k.cc) != runs_on.end();
    });
    if (inside && covers) return &f;
  }
  return nullptr;
}

}  // namespace farm::wheel
