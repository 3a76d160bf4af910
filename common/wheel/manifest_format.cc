// Text renderings of arch manifests (declared in manifest.h).
#include <cstdio>

#include "common/wheel/manifest.h"

namespace farm::wheel {
namespace {

std::string JoinVersions(const std::vector<arch::Version>& versions) {
  if (versions.empty()) return "(none)";
  std::string out;
  for (const arch::Version& v : versions) {
    if (!out.empty()) out += ", ";
    out += v.ToString();
  }
  return out;
}

std::string ImageLine(const CodeImage& image) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "  %-4s %-14s %s container %d entry %d, %s, %llu bytes",
                image.image.kind == arch::Image::Kind::kSass ? "sass" : "ptx", image.name.c_str(),
                image.section.c_str(), image.container, image.index,
                CompressionName(image.compression),
                static_cast<unsigned long long>(image.payload_bytes));
  std::string out = buf;
  if (!image.ptx_version.empty()) out += ", PTX ISA " + image.ptx_version;
  if (!image.producer.empty()) out += ", by " + image.producer;
  return out + ", suffix from " + image.suffix_source + "\n";
}

// cuobjdump names an image after its file without the ".so" (and any version after it):
// "_fused.cpython-312-x86_64-linux-gnu.so" -> "_fused.cpython-312-x86_64-linux-gnu",
// "libcublas.so.13" -> "libcublas" (checked against cuobjdump 13.0 on real binaries).
std::string Stem(const std::string& module) {
  size_t slash = module.rfind('/');
  std::string base = slash == std::string::npos ? module : module.substr(slash + 1);
  for (size_t pos = base.rfind(".so"); pos != std::string::npos && pos > 0;
       pos = base.rfind(".so", pos - 1)) {
    if (pos + 3 == base.size() || base[pos + 3] == '.') return base.substr(0, pos);
  }
  size_t dot = base.rfind('.');
  return dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
}

}  // namespace

std::string FormatManifest(const ArchManifest& manifest) {
  std::string out;
  for (const ModuleManifest& m : manifest.modules) {
    if (!m.has_device_code()) {
      out += m.module + ": no CUDA device code\n";
      continue;
    }
    out += m.module + ": " + std::to_string(m.images.size()) + " images\n";
    for (const CodeImage& image : m.images) out += ImageLine(image);
    if (m.ignored_entries > 0) {
      out += "  (" + std::to_string(m.ignored_entries) + " fatbin entries of other kinds)\n";
    }
    out += "  runs on: " + JoinVersions(m.runs_on) + "\n";
  }
  out += "wheel runs on: " + JoinVersions(manifest.runs_on) + "\n";
  for (const MissingImage& miss : manifest.missing) out += "missing: " + miss.ToString() + "\n";
  for (const UnrequestedImage& extra : manifest.unrequested) {
    out += "not requested: " + extra.module + " holds " + extra.image + "\n";
  }
  return out;
}

std::string FormatCuobjdumpStyle(const ModuleManifest& module) {
  std::string out;
  const std::string stem = Stem(module.module);
  for (auto kind : {arch::Image::Kind::kSass, arch::Image::Kind::kPtx}) {
    int n = 0;
    for (const CodeImage& image : module.images) {
      if (image.image.kind != kind) continue;
      // cuobjdump names PTX files by the sm_ spelling of their target as well.
      arch::Image as_sm = image.image;
      as_sm.kind = arch::Image::Kind::kSass;
      ++n;
      char buf[128];
      std::snprintf(buf, sizeof buf, "%s file %4d: %s.%d.%s.%s\n",
                    kind == arch::Image::Kind::kSass ? "ELF" : "PTX", n, stem.c_str(), n,
                    as_sm.ToString().c_str(), kind == arch::Image::Kind::kSass ? "cubin" : "ptx");
      out += buf;
    }
  }
  return out;
}

}  // namespace farm::wheel
