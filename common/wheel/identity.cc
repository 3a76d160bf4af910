#include "common/wheel/identity.h"

#include <algorithm>
#include <tuple>

#include "common/wheel/relabel.h"
#include "common/wheel/sm_families.h"

namespace farm::wheel {
namespace {

std::string ImageLabel(const arch::Image& image) {
  std::string out = image.kind == arch::Image::Kind::kSass ? "sm" : "ptx";
  out += std::to_string(image.major) + std::to_string(image.minor);
  if (image.suffix != '\0') out += image.suffix;
  return out;
}

// Drops the empty segments a missing part leaves: "cu130..x." -> "cu130.x".
std::string CollapseDots(const std::string& label) {
  std::string out;
  for (char c : label) {
    if (c == '.' && (out.empty() || out.back() == '.')) continue;
    out += c;
  }
  while (!out.empty() && out.back() == '.') out.pop_back();
  return out;
}

}  // namespace

std::string ArchLabel(const std::vector<arch::Image>& images) {
  std::vector<arch::Image> sorted = images;
  auto key = [](const arch::Image& i) {
    return std::make_tuple(i.major, i.minor, i.kind == arch::Image::Kind::kPtx, i.suffix);
  };
  std::sort(sorted.begin(), sorted.end(),
            [&key](const arch::Image& a, const arch::Image& b) { return key(a) < key(b); });
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::string out;
  for (const arch::Image& image : sorted) out += (out.empty() ? "" : ".") + ImageLabel(image);
  return out;
}

Result<std::vector<arch::Image>> ManifestImages(const farm::v1::ArchManifest& manifest) {
  std::vector<arch::Image> out;
  for (const auto& image : manifest.images()) {
    FARM_ASSIGN_OR_RETURN(arch::Image parsed, arch::ParseImage(image.arch()));
    if (std::find(out.begin(), out.end(), parsed) == out.end()) out.push_back(parsed);
  }
  return out;
}

Result<std::vector<arch::Image>> ExpectedImages(const farm::v1::MatrixCell& cell) {
  if (cell.arch_list().empty()) return std::vector<arch::Image>{};
  FARM_ASSIGN_OR_RETURN(auto targets, arch::ParseArchList(cell.arch_list()));
  std::vector<arch::Image> out;
  for (const arch::Target& t : targets) {
    for (const arch::Image& image : arch::ImagesOf(t)) {
      if (std::find(out.begin(), out.end(), image) == out.end()) out.push_back(image);
    }
  }
  return out;
}

std::string VariantLabel(const farm::v1::MatrixCell& cell, const std::vector<arch::Image>& images,
                         const std::string& family) {
  std::string out;
  if (!cell.cuda().empty()) out += "cu" + NoDot(cell.cuda());
  if (!cell.torch().empty()) out += "torch" + cell.torch();
  std::string arch = family.empty() ? ArchLabel(images) : family;
  if (!arch.empty()) out += (out.empty() ? "" : ".") + arch;
  return out;
}

std::map<std::string, std::string> LabelVars(const farm::v1::MatrixCell& cell,
                                             const std::vector<arch::Image>& images,
                                             const std::string& commit, const std::string& family) {
  auto vars = CellLabelVars(cell.python(), cell.torch(), cell.cuda(), cell.platform());
  vars["arch"] = ArchLabel(images);
  vars["commit"] = commit.substr(0, 8);
  vars["family"] = family;
  vars["variant"] = VariantLabel(cell, images, family);
  return vars;
}

Result<std::string> WheelLabel(const std::string& label_template, const farm::v1::MatrixCell& cell,
                               const std::vector<arch::Image>& images, const std::string& commit,
                               const std::string& family) {
  const std::string& tmpl =
      label_template.empty() ? std::string(kDefaultLabelTemplate) : label_template;
  // Render without the final validity check first: an absent part may leave "..".
  std::map<std::string, std::string> vars = LabelVars(cell, images, commit, family);
  std::string rendered;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] != '{') {
      rendered += tmpl[i];
      continue;
    }
    size_t close = tmpl.find('}', i);
    if (close == std::string::npos) {
      return Status::InvalidArgument("local version template \"" + tmpl + "\": unterminated '{'");
    }
    std::string key = tmpl.substr(i + 1, close - i - 1);
    auto it = vars.find(key);
    if (it == vars.end()) {
      return Status::InvalidArgument("local version template \"" + tmpl +
                                     "\": unknown placeholder {" + key + "}");
    }
    rendered += it->second;
    i = close;
  }
  for (char& c : rendered) c = (c == '-' || c == '_') ? '.' : c;
  std::string label = CollapseDots(rendered);
  FARM_ASSIGN_OR_RETURN(std::string normal, RenderLocalLabel(label, {}));
  return normal;
}

bool IsTorchCandidate(const farm::v1::Recipe& recipe, const std::string& torch) {
  if (torch.empty()) return false;
  const auto& listed = recipe.environment().torch_candidates();
  return std::find(listed.begin(), listed.end(), torch) != listed.end();
}

Result<std::string> RecipeWheelLabel(const farm::v1::Recipe& recipe,
                                     const farm::v1::MatrixCell& cell,
                                     const std::vector<arch::Image>& images) {
  farm::v1::MatrixCell named = cell;
  const std::string& floor = recipe.torch_abi().stable_floor();
  const bool candidate = IsTorchCandidate(recipe, cell.torch());
  if (!floor.empty()) {  // one wheel for every torch from the floor, any toolkit of its major
    named.set_torch(floor + "andhigher");
    named.set_cuda(cell.cuda().substr(0, cell.cuda().find('.')));
  } else if (candidate) {
    named.set_torch(cell.torch() + "rc");
  }
  std::string family;
  if (auto families = ParseFamilies(recipe.matrix().families()); families.ok()) {
    if (const SmFamily* f = FamilyServed(images, *families)) family = f->Label();
  }
  const std::string& tmpl = recipe.publish().local_version_template();
  FARM_ASSIGN_OR_RETURN(
      std::string label,
      WheelLabel(tmpl, named, images,
                 recipe.source().has_git() ? recipe.source().git().commit() : "", family));
  const bool names_torch = tmpl.empty() || tmpl.find("{torch") != std::string::npos ||
                           tmpl.find("{variant}") != std::string::npos;
  if (!candidate || !floor.empty() || names_torch) return label;
  return RenderLocalLabel(label + (label.empty() ? "" : ".") + "torch" + named.torch(), {});
}

std::string LocalLabelOf(const std::string& version) {
  size_t plus = version.find('+');
  return plus == std::string::npos ? "" : version.substr(plus + 1);
}

}  // namespace farm::wheel
