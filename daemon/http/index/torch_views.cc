#include "daemon/http/index/torch_views.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "daemon/http/index/gpu_views.h"

namespace farm::http {

namespace json = boost::json;

namespace {

std::optional<arch::Version> CudaOf(std::string_view cuda) {
  if (cuda.empty()) return std::nullopt;
  auto v = arch::ParseVersion(cuda);
  if (!v.ok()) return std::nullopt;
  return *v;
}

std::string PublicOf(const std::string& version) { return version.substr(0, version.find('+')); }

// The torch requirements of one request's files by sha256 (the catalog caches METADATA;
// this keeps only the requirement, not a copy of each text).
using RequirementCache = std::map<std::string, TorchRequirement>;

const TorchRequirement* RequirementOf(IndexCatalog& catalog, const IndexFile& f,
                                      RequirementCache* cache) {
  auto it = cache->find(f.sha256);
  if (it == cache->end()) {
    auto md = catalog.Metadata(f);
    if (!md.ok()) return nullptr;
    it = cache->emplace(f.sha256, std::move(md->torch)).first;
  }
  return &it->second;
}

// Why `f` is kept out of the views of `torch`: its proof with a release of that minor
// failed; nullptr when it was not refused.
const std::string* RefusalFor(const IndexFile& f, const upstream::ReleaseVersion& torch) {
  for (const auto& [release, why] : f.refused_torches) {
    auto r = upstream::ParseReleaseVersion(release);
    if (r && r->Minor() == torch.Minor()) return &why;
  }
  return nullptr;
}

}  // namespace

std::string CudaSegment(std::string_view cuda) {
  auto v = CudaOf(cuda);
  if (!v) return "";
  return "cu" + std::to_string(v->major) + std::to_string(v->minor);
}

std::optional<arch::Version> ParseCudaSegment(std::string_view segment) {
  if (!segment.starts_with("cu") || segment.size() < 4 || segment.size() > 6) return std::nullopt;
  std::string_view digits = segment.substr(2);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      digits.front() == '0') {
    return std::nullopt;
  }
  return arch::Version{std::stoi(std::string(digits.substr(0, digits.size() - 1))),
                       digits.back() - '0'};
}

std::optional<upstream::ReleaseVersion> ParseTorchSegment(std::string_view segment) {
  if (!segment.starts_with("torch")) return std::nullopt;
  std::string_view text = segment.substr(5);
  if (text.empty() || text.size() > 32) return std::nullopt;
  auto v = upstream::ParseReleaseVersion(text);
  if (!v || !v->local.empty() || v->Public() != text) return std::nullopt;
  return v;
}

std::string TorchSegment(const upstream::ReleaseVersion& torch) { return "torch" + torch.Public(); }

bool CudaServes(std::string_view file_cuda, const arch::Version& cuda) {
  auto v = CudaOf(file_cuda);
  return v && v->major == cuda.major && v->minor <= cuda.minor;
}

std::vector<IndexFile> FilesForTorch(IndexCatalog& catalog, const std::vector<IndexFile>& files,
                                     const arch::Version& cuda,
                                     const upstream::ReleaseVersion& torch) {
  RequirementCache cache;
  std::vector<const IndexFile*> admitted;
  // (project, public version, tags) -> the newest CUDA among the admitted files.
  std::map<std::tuple<std::string, std::string, std::string>, arch::Version> newest;
  for (const IndexFile& f : files) {
    if (!CudaServes(f.cuda, cuda)) continue;
    const TorchRequirement* req = RequirementOf(catalog, f, &cache);
    if (req == nullptr || !AdmitsTorch(*req, torch) || RefusalFor(f, torch)) continue;
    admitted.push_back(&f);
    auto key = std::make_tuple(f.project, PublicOf(f.version), f.tags);
    arch::Version v = *CudaOf(f.cuda);
    auto [it, fresh] = newest.emplace(key, v);
    if (!fresh && it->second < v) it->second = v;
  }
  std::vector<IndexFile> out;
  for (const IndexFile* f : admitted) {
    if (newest[std::make_tuple(f->project, PublicOf(f->version), f->tags)] == *CudaOf(f->cuda)) {
      out.push_back(*f);
    }
  }
  return out;
}

std::string NoTorchWheelMessage(IndexCatalog& catalog, const std::vector<IndexFile>& files,
                                const std::string& project, const arch::Version& cuda,
                                const upstream::ReleaseVersion& torch, const arch::Version& cc) {
  RequirementCache cache;
  std::set<std::string> needs;
  std::string refused;
  for (const IndexFile& f : files) {
    if (f.project != project || GpuFit(f, cc) == 0) continue;
    if (const std::string* why = RefusalFor(f, torch)) {
      refused += "; " + f.filename + " failed validation with torch " + torch.Minor() + ": " + *why;
    }
    const TorchRequirement* req = RequirementOf(catalog, f, &cache);
    std::string what = req == nullptr ? "an unreadable METADATA"
                       : req->present ? req->text
                                      : "no torch";
    needs.insert(what + " (" + (f.cuda.empty() ? "cpu" : CudaSegment(f.cuda)) + ")");
  }
  std::string msg = "no wheel of " + project + " installs next to torch " + torch.Public() +
                    " for CUDA " + cuda.ToString() + " on compute capability " + cc.ToString();
  if (needs.empty()) return msg + "; the farm has no wheel of it for this GPU";
  msg += "; its wheels for this GPU require:";
  bool first = true;
  for (const auto& r : needs) msg += (first ? " " : ", ") + r, first = false;
  return msg + refused;
}

std::string TorchView::path() const {
  auto v = upstream::ParseReleaseVersion(torch);
  return "/" + CudaSegment(cuda) + "/" + GpuSegment(cc) + "/" +
         (v ? TorchSegment(*v) : "torch" + torch) + "/simple/";
}

std::vector<TorchView> ListTorchViews(IndexCatalog& catalog, const std::vector<IndexFile>& files) {
  RequirementCache cache;
  std::set<arch::Version> cudas;
  std::map<int, std::map<std::string, upstream::ReleaseVersion>> torches;  // CUDA major ->
  for (const IndexFile& f : files) {
    auto cuda = CudaOf(f.cuda);
    if (!cuda) continue;
    cudas.insert(*cuda);
    auto& known = torches[cuda->major];
    if (auto t = upstream::ParseReleaseVersion(f.torch); t && t->local.empty()) {
      known.emplace(t->Public(), *t);
    }
    if (const TorchRequirement* req = RequirementOf(catalog, f, &cache)) {
      for (const auto& t : req->named) {
        if (t.local.empty()) known.emplace(t.Public(), t);
      }
    }
  }
  std::vector<TorchView> out;
  for (const arch::Version& cuda : cudas) {
    std::vector<upstream::ReleaseVersion> known;
    for (const auto& [text, t] : torches[cuda.major]) known.push_back(t);
    std::sort(known.begin(), known.end(),
              [](const auto& a, const auto& b) { return upstream::CompareReleases(a, b) < 0; });
    for (const auto& torch : known) {
      std::vector<IndexFile> admitted = FilesForTorch(catalog, files, cuda, torch);
      if (admitted.empty()) continue;
      for (const auto& k : arch::KnownCcs()) {
        std::set<std::string> projects;
        for (const IndexFile& f : FilesForGpu(admitted, k.cc)) projects.insert(f.project);
        if (projects.empty()) continue;
        out.push_back(TorchView{cuda.ToString(), torch.Public(), k.cc,
                                std::vector<std::string>(projects.begin(), projects.end())});
      }
    }
  }
  return out;
}

json::array TorchDirectoryJson(const std::vector<TorchView>& views, const std::string& base) {
  json::array out;
  for (const TorchView& v : views) {
    json::array projects;
    for (const auto& p : v.projects) projects.push_back(json::value(p));
    std::string url = base + v.path();
    out.push_back(
        json::object{{"cuda", v.cuda},
                     {"gpu", GpuSegment(v.cc)},
                     {"compute_capability", v.cc.ToString()},
                     {"gpus", arch::GpusOf(v.cc)},
                     {"torch", v.torch},
                     {"index_url", url},
                     {"projects", std::move(projects)},
                     {"pip", "pip install --index-url " + url + " " + v.projects.front()}});
  }
  return out;
}

}  // namespace farm::http
