#include "daemon/http/index/wheel_variants.h"

#include <boost/json.hpp>
#include <set>

#include "common/wheel/identity.h"

namespace farm::http {

namespace json = boost::json;

namespace {

constexpr char kSchema[] = "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json";

std::string PublicVersion(const std::string& version) {
  return version.substr(0, version.find('+'));
}

// The distribution part of the file name ("attn_example").
std::string Distribution(const IndexFile& f) { return f.filename.substr(0, f.filename.find('-')); }

json::object Properties(const IndexFile& f, const std::string& torch_requirement) {
  json::array sm;
  std::set<std::string> seen;
  for (const arch::Image& image : f.images) {
    std::string v = std::to_string(image.major) + std::to_string(image.minor) +
                    (image.kind == arch::Image::Kind::kSass ? "_real" : "_virtual");
    if (seen.insert(v).second) sm.push_back(json::value(v));
  }
  json::object nvidia;
  if (!f.cuda.empty()) nvidia["cuda_version_lower_bound"] = json::array{json::value(f.cuda)};
  if (!sm.empty()) nvidia["sm_arch"] = std::move(sm);
  json::object properties{{"nvidia", std::move(nvidia)}};
  // What torch the wheel installs next to (its Requires-Dist), so a variant-aware
  // installer can match it against the installed torch as the torch views do.
  if (!torch_requirement.empty()) {
    properties["torch"] =
        json::object{{"requires_dist", json::array{json::value(torch_requirement)}}};
  }
  return properties;
}

}  // namespace

std::string VariantsFileName(const IndexFile& file) {
  return Distribution(file) + "-" + PublicVersion(file.version) + "-variants.json";
}

std::optional<std::string> VariantsJson(const std::vector<IndexFile>& files,
                                        const std::string& project, const std::string& version,
                                        const TorchRequirementLookup& torch_of) {
  json::object variants;
  for (const IndexFile& f : files) {
    if (f.project != project || PublicVersion(f.version) != version) continue;
    std::string label = wheel::LocalLabelOf(f.version);
    variants[label.empty() ? "null" : label] = Properties(f, torch_of ? torch_of(f) : "");
  }
  if (variants.empty()) return std::nullopt;
  json::object doc{{"$schema", kSchema},
                   {"default-priorities", json::object{{"namespace", json::array{"nvidia"}}}},
                   {"variants", std::move(variants)}};
  return json::serialize(doc);
}

Response HandleVariantsFile(IndexCatalog& catalog, std::string_view rest) {
  size_t slash = rest.find('/');
  if (slash == rest.npos) return ErrorResponse(Status::NotFound("no such variants file"));
  std::string project(rest.substr(0, slash));
  std::string name(rest.substr(slash + 1));
  auto files = catalog.Files("");
  if (!files.ok()) return ErrorResponse(files.status());
  for (const IndexFile& f : *files) {
    if (f.project != project || VariantsFileName(f) != name) continue;
    auto doc = VariantsJson(*files, project, PublicVersion(f.version), [&](const IndexFile& g) {
      auto md = catalog.Metadata(g);
      return md.ok() ? md->torch.text : std::string();
    });
    if (doc) return JsonResponse(200, *doc);
  }
  return ErrorResponse(Status::NotFound("no variants file " + name + " for " + project));
}

}  // namespace farm::http
