#include "daemon/http/index/gpu_views.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <tuple>

#include "common/strings.h"

namespace farm::http {
namespace {

// Release segments of a public version, "2.10.1rc1+x" -> {2, 10, 1}; text after the last
// digit of a segment is ignored (ordering only, for listing).
std::vector<int64_t> ReleaseOf(std::string_view version) {
  version = version.substr(0, version.find('+'));
  std::vector<int64_t> out;
  size_t pos = 0;
  while (pos < version.size() && out.size() < 16) {
    int64_t n = 0;
    size_t start = pos;
    while (pos < version.size() && version[pos] >= '0' && version[pos] <= '9' && n < (1LL << 50)) {
      n = n * 10 + (version[pos++] - '0');
    }
    if (pos == start) break;
    out.push_back(n);
    if (pos >= version.size() || version[pos] != '.') break;
    ++pos;
  }
  return out;
}

// PEP 440 pre-releases and developmental releases ("1.0rc1", "2.0.dev3", "1.0b2"): GPU
// views leave them out; the variant and root views list them for those who ask.
bool IsPreRelease(std::string_view version) {
  std::string v = AsciiLower(version.substr(0, version.find('+')));
  for (size_t i = 1; i < v.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(v[i - 1])) && v[i - 1] != '.' && v[i - 1] != '-' &&
        v[i - 1] != '_') {
      continue;
    }
    std::string_view rest = std::string_view(v).substr(i);
    for (std::string_view tag : {"dev", "rc", "alpha", "beta", "preview", "pre", "a", "b", "c"}) {
      if (rest.starts_with(tag) && (rest.size() == tag.size() ||
                                    std::isdigit(static_cast<unsigned char>(rest[tag.size()])))) {
        return true;
      }
    }
  }
  return false;
}

bool NewerVersion(const IndexFile& a, const IndexFile& b) {
  auto ra = ReleaseOf(a.version), rb = ReleaseOf(b.version);
  if (ra != rb) return ra > rb;
  return a.version > b.version;
}

// True when `a` serves the GPU better than `b` (the rule in gpu_views.h).
bool Better(const IndexFile& a, const IndexFile& b, const arch::Version& cc) {
  int fa = GpuFit(a, cc), fb = GpuFit(b, cc);
  if (fa != fb) return fa > fb;
  if (a.images.size() != b.images.size()) return a.images.size() < b.images.size();
  if (a.created_ms != b.created_ms) return a.created_ms > b.created_ms;
  return a.filename < b.filename;
}

}  // namespace

std::string GpuSegment(const arch::Version& cc) {
  return "sm" + std::to_string(cc.major) + std::to_string(cc.minor);
}

std::optional<arch::Version> ParseGpuSegment(std::string_view segment) {
  if (!segment.starts_with("sm") || segment.size() < 4 || segment.size() > 5) return std::nullopt;
  for (const auto& known : arch::KnownCcs()) {
    if (GpuSegment(known.cc) == segment) return known.cc;
  }
  return std::nullopt;
}

int GpuFit(const IndexFile& file, const arch::Version& cc) {
  if (file.images.empty()) return 1;  // no device code: loads anywhere, fits nothing better
  int best = 0;
  for (const arch::Image& image : file.images) {
    if (!arch::CanLoad(image, cc)) continue;
    bool sass = image.kind == arch::Image::Kind::kSass;
    bool exact = image.major == cc.major && image.minor == cc.minor;
    best = std::max(best, sass ? (exact ? 3 : 2) : 1);
  }
  return best;
}

std::vector<IndexFile> FilesForGpu(const std::vector<IndexFile>& files, const arch::Version& cc) {
  // (project, public version + tags) -> best file; a label differs between candidates.
  std::map<std::tuple<std::string, std::string, std::string>, const IndexFile*> best;
  for (const IndexFile& f : files) {
    if (GpuFit(f, cc) == 0 || IsPreRelease(f.version)) continue;
    auto key = std::make_tuple(f.project, f.version.substr(0, f.version.find('+')), f.tags);
    auto [it, fresh] = best.emplace(key, &f);
    if (!fresh && Better(f, *it->second, cc)) it->second = &f;
  }
  std::vector<IndexFile> out;
  std::set<std::string> names;
  for (const auto& [key, f] : best) {
    if (names.insert(f->filename).second) out.push_back(*f);
  }
  std::sort(out.begin(), out.end(), [](const IndexFile& a, const IndexFile& b) {
    if (a.project != b.project) return a.project < b.project;
    if (a.version != b.version) return NewerVersion(a, b);
    return a.filename < b.filename;
  });
  return out;
}

std::vector<GpuView> ListGpuViews(const std::vector<IndexFile>& files) {
  // variant -> (cuda, torch, capabilities, projects per capability)
  struct Acc {
    std::string cuda, torch;
    std::map<arch::Version, std::set<std::string>> projects;
    std::set<std::string> portable;  // projects with wheels without device code
  };
  std::map<std::string, Acc> by_variant;
  for (const IndexFile& f : files) {
    Acc& acc = by_variant[f.variant];
    acc.cuda = f.cuda;
    acc.torch = f.torch;
    if (f.images.empty()) {
      acc.portable.insert(f.project);
      continue;
    }
    for (const arch::Version& cc : f.runs_on) acc.projects[cc].insert(f.project);
  }
  std::vector<GpuView> out;
  for (auto& [variant, acc] : by_variant) {
    if (acc.projects.empty()) {
      for (const auto& known : arch::KnownCcs()) acc.projects[known.cc];
    }
    for (auto& [cc, projects] : acc.projects) {
      projects.insert(acc.portable.begin(), acc.portable.end());
      out.push_back(GpuView{variant, acc.cuda, acc.torch, cc,
                            std::vector<std::string>(projects.begin(), projects.end())});
    }
  }
  return out;
}

}  // namespace farm::http
