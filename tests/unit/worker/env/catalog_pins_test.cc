// Every provisioned recipe of the catalog pins a complete lock for each torch release its
// cells install: the worker's own check (pin_check.h) finds nothing to add when it is given
// what those releases and their dependencies require, as tests/data/torch_requires.json
// records them (with where each list came from). A recipe whose cell installs a release
// the data does not know, or pins a dist whose requirements are not recorded, fails here.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/fs.h"
#include "common/recipe/cell_environment.h"
#include "common/recipe/matrix.h"
#include "common/recipe/recipe.h"
#include "common/wheel/wheel_name.h"
#include "worker/env/env_spec.h"
#include "worker/env/pin_check.h"

namespace farm::env {
namespace {

struct Recorded {
  std::map<std::string, std::vector<std::string>> torch;  // "2.8.0+cu128" -> Requires-Dist
  std::map<std::string, std::vector<std::string>> dists;  // "sympy==1.14.0" -> Requires-Dist
};

std::vector<std::string> Strings(const boost::json::value& v) {
  std::vector<std::string> out;
  for (const auto& s : v.as_array()) out.emplace_back(s.as_string());
  return out;
}

const Recorded& Data() {
  static const Recorded data = [] {
    Recorded r;
    auto text = fs::ReadFile(std::string(FARM_SOURCE_DIR) + "/tests/data/torch_requires.json");
    EXPECT_TRUE(text.ok());
    boost::json::value root = boost::json::parse(*text);
    for (const auto& [release, entry] : root.at("torch").as_object()) {
      EXPECT_FALSE(entry.at("sources").as_array().empty()) << release;
      r.torch[std::string(release)] = Strings(entry.at("requires_dist"));
    }
    for (const auto& [pin, requires_dist] : root.at("dists").as_object()) {
      r.dists[std::string(pin)] = Strings(requires_dist);
    }
    return r;
  }();
  return data;
}

// The pins of each cell of `recipe` checked against the data; returns the releases checked.
std::set<std::string> CheckRecipe(const std::string& relative, const std::string& newest) {
  auto loaded = recipe::LoadRecipeFile(std::string(FARM_SOURCE_DIR) + "/kernels/" + relative);
  EXPECT_TRUE(loaded.ok()) << relative << ": " << loaded.status().ToString();
  if (!loaded.ok()) return {};
  const farm::v1::Recipe& r = loaded->recipe;
  std::set<std::string> checked;
  recipe::MatrixExpansion expansion = recipe::ExpandMatrix({}, r.matrix());
  std::vector<farm::v1::MatrixCell> cells = expansion.cells;
  if (r.matrix().torch().empty()) {
    // A followed torch axis (resolved by farmd at submit): the cells of each release the
    // recipe pins a list for, as farmd's resolution to that release makes them.
    cells.clear();
    for (const auto& [release, pins] : r.environment().torch_requirements()) {
      farm::v1::MatrixCell cell;
      cell.set_python(r.matrix().python(0));
      cell.set_torch(release.substr(0, release.rfind('.')));
      std::string variant = TorchVariant(release);
      cell.set_cuda(variant.substr(2, 2) + "." + variant.substr(4));
      cell.set_platform("linux_x86_64");
      cells.push_back(cell);
      (*loaded->recipe.mutable_environment()->mutable_torch())[cell.torch()] =
          release.substr(0, release.find('+'));
    }
  }
  for (const auto& cell : cells) {
    const std::string where = relative + " " + recipe::DescribeCell(cell);
    auto spec = recipe::CellEnvironment(loaded->recipe, cell);
    EXPECT_TRUE(spec.ok()) << where << ": " << spec.status().ToString();
    if (!spec.ok()) continue;
    std::string torch =
        (spec->torch_newest() ? newest : spec->torch_version()) + "+" + spec->torch_variant();
    // As the worker makes its EnvSpec (worker/job/environments.h ToEnvSpec).
    std::vector<std::string> requirements(spec->requirements().begin(), spec->requirements().end());
    if (auto group = spec->torch_requirements().find(torch);
        group != spec->torch_requirements().end()) {
      requirements.insert(requirements.end(), group->second.pins().begin(),
                          group->second.pins().end());
    }
    auto recorded = Data().torch.find(torch);
    if (recorded == Data().torch.end()) {
      ADD_FAILURE() << where << ": torch " << torch << " is not in tests/data/torch_requires.json";
      continue;
    }
    std::vector<PinnedDist> dists = {{"torch", torch, recorded->second}};
    for (const std::string& text : requirements) {
      auto pin = ParseRequirement(text);
      EXPECT_TRUE(pin.ok()) << where << ": " << text;
      if (!pin.ok()) continue;
      auto it = Data().dists.find(wheel::NormalizeProjectName(pin->name) + "==" + pin->version);
      EXPECT_NE(it, Data().dists.end())
          << where << ": what " << text << " requires is not recorded in the data";
      if (it != Data().dists.end()) dists.push_back({pin->name, pin->version, it->second});
    }
    auto problems = CheckPins(dists, upstream::LinuxCpythonEnv(cell.python(), "x86_64"), nullptr);
    EXPECT_TRUE(problems.empty()) << where << ":\n" << DescribeProblems(problems);
    checked.insert(torch + " py" + cell.python());
  }
  return checked;
}

TEST(CatalogPinsTest, SageAttentionForCuda128And129PinsBothTorchBuilds) {
  EXPECT_EQ(CheckRecipe("sageattention/provisioned-cu128-cu129.yaml", ""),
            (std::set<std::string>{"2.8.0+cu128 py3.12", "2.8.0+cu129 py3.12"}));
}

TEST(CatalogPinsTest, SageAttentionForSm120PinsTorch28OnPython311) {
  EXPECT_EQ(CheckRecipe("sageattention/provisioned-sm120-cu128.yaml", ""),
            (std::set<std::string>{"2.8.0+cu128 py3.11"}));
}

TEST(CatalogPinsTest, SageAttention3PinsTheNewestTorch211ItKnows) {
  EXPECT_EQ(CheckRecipe("sageattn3/provisioned-cu128.yaml", "2.11.0"),
            (std::set<std::string>{"2.11.0+cu128 py3.13"}));
}

TEST(CatalogPinsTest, FollowedTorchPinsTheReleasesItLists) {
  EXPECT_EQ(CheckRecipe("sageattention/follow-torch.yaml", ""),
            (std::set<std::string>{"2.11.0+cu128 py3.12", "2.11.0+cu130 py3.12"}));
}

TEST(CatalogPinsTest, AnUnpinnedRequirementOfTheDataIsCaught) {
  // The check this test relies on does fail: torch 2.8.0+cu128 without its cuBLAS pin.
  std::vector<PinnedDist> dists = {{"torch", "2.8.0+cu128", Data().torch.at("2.8.0+cu128")}};
  auto problems = CheckPins(dists, upstream::LinuxCpythonEnv("3.12", "x86_64"), nullptr);
  EXPECT_NE(DescribeProblems(problems).find("add nvidia-cublas-cu12==12.8.4.1"), std::string::npos);
  EXPECT_NE(DescribeProblems(problems).find("add triton==3.4.0"), std::string::npos);
}

}  // namespace
}  // namespace farm::env
