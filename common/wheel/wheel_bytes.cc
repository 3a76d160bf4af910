#include "common/wheel/wheel_bytes.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

#include "common/wheel/manifest.h"

namespace farm::wheel {
namespace {

constexpr size_t kDeflateChunk = 256 * 1024;

// The bytes of a module's zip entry that are not its code images.
WheelPartBytes ModuleRemainder(const ModuleManifest& m, const ZipEntrySize& entry) {
  int64_t images_c = 0, images_u = 0;
  for (const CodeImage& image : m.images) {
    images_c += static_cast<int64_t>(image.wheel_bytes);
    images_u += static_cast<int64_t>(image.fatbin_bytes);
  }
  return {m.module + " (other)", std::max<int64_t>(0, entry.compressed - images_c),
          std::max<int64_t>(0, entry.uncompressed - images_u)};
}

// Scales the measured images of `m` down so that together they fit the module's zip entry.
void FitImages(int64_t entry_compressed, ModuleManifest* m) {
  uint64_t sum = 0;
  for (const CodeImage& image : m->images) sum += image.wheel_bytes;
  if (sum <= static_cast<uint64_t>(std::max<int64_t>(entry_compressed, 0))) return;
  const long double scale = static_cast<long double>(std::max<int64_t>(entry_compressed, 0)) / sum;
  for (CodeImage& image : m->images) {
    image.wheel_bytes = static_cast<uint64_t>(image.wheel_bytes * scale);
  }
}

}  // namespace

int64_t DeflatedSize(std::string_view bytes) {
  z_stream z{};
  if (deflateInit(&z, 1) != Z_OK) return static_cast<int64_t>(bytes.size());
  std::string out(kDeflateChunk, '\0');
  int64_t total = 0;
  size_t pos = 0;
  int rc = Z_OK;
  do {
    size_t take = std::min<size_t>(bytes.size() - pos, 1u << 30);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + pos));
    z.avail_in = static_cast<uInt>(take);
    pos += take;
    int flush = pos == bytes.size() ? Z_FINISH : Z_NO_FLUSH;
    do {
      z.next_out = reinterpret_cast<Bytef*>(out.data());
      z.avail_out = static_cast<uInt>(out.size());
      rc = deflate(&z, flush);
      total += static_cast<int64_t>(out.size() - z.avail_out);
    } while (z.avail_out == 0 && rc != Z_STREAM_ERROR);
  } while (pos < bytes.size() && rc != Z_STREAM_ERROR);
  deflateEnd(&z);
  return rc == Z_STREAM_ERROR ? static_cast<int64_t>(bytes.size()) : total;
}

void AttributeWheelBytes(const ZipDirectory& zip, ArchManifest* manifest) {
  std::map<std::string, const ZipEntrySize*> entries;
  for (const ZipEntrySize& e : zip.entries) entries.emplace(e.name, &e);
  std::map<std::string, ModuleManifest*> modules;
  for (ModuleManifest& m : manifest->modules) {
    if (m.has_device_code()) modules.emplace(m.module, &m);
  }
  WheelBytesBreakdown& b = manifest->bytes;
  b = WheelBytesBreakdown{};
  b.known = true;
  b.wheel_bytes = zip.file_bytes;
  std::vector<WheelPartBytes> parts;
  int64_t images_c = 0, images_u = 0;
  for (const ZipEntrySize& e : zip.entries) {
    b.uncompressed_bytes += e.uncompressed;
    auto m = modules.find(e.name);
    if (m == modules.end()) {
      parts.push_back({e.name, e.compressed, e.uncompressed});
      continue;
    }
    FitImages(e.compressed, m->second);
    for (const CodeImage& image : m->second->images) {
      images_c += static_cast<int64_t>(image.wheel_bytes);
      images_u += static_cast<int64_t>(image.fatbin_bytes);
    }
    parts.push_back(ModuleRemainder(*m->second, e));
  }
  std::stable_sort(
      parts.begin(), parts.end(),
      [](const WheelPartBytes& x, const WheelPartBytes& y) { return x.compressed > y.compressed; });
  if (parts.size() > kLargestWheelParts) parts.resize(kLargestWheelParts);
  int64_t listed_c = 0, listed_u = 0;
  for (const WheelPartBytes& p : parts) listed_c += p.compressed, listed_u += p.uncompressed;
  b.largest = std::move(parts);
  b.rest = {"rest", std::max<int64_t>(0, b.wheel_bytes - images_c - listed_c),
            std::max<int64_t>(0, b.uncompressed_bytes - images_u - listed_u)};
}

void WheelBytesToProto(const WheelBytesBreakdown& bytes, farm::v1::ArchManifest* out) {
  if (!bytes.known) return;
  farm::v1::WheelBytes* b = out->mutable_bytes();
  b->set_wheel_bytes(bytes.wheel_bytes);
  b->set_uncompressed_bytes(bytes.uncompressed_bytes);
  for (const WheelPartBytes& p : bytes.largest) {
    farm::v1::WheelPart* part = b->add_largest();
    part->set_name(p.name);
    part->set_compressed_bytes(p.compressed);
    part->set_uncompressed_bytes(p.uncompressed);
  }
  b->mutable_rest()->set_name(bytes.rest.name);
  b->mutable_rest()->set_compressed_bytes(bytes.rest.compressed);
  b->mutable_rest()->set_uncompressed_bytes(bytes.rest.uncompressed);
}

std::vector<SizePart> WheelSizeParts(const farm::v1::ArchManifest& manifest) {
  std::vector<SizePart> out;
  if (!manifest.has_bytes()) return out;
  std::map<std::tuple<std::string, std::string>, SizePart> images;
  for (const auto& image : manifest.images()) {
    SizePart& p = images[{image.module(), image.arch()}];
    p.what = image.arch() + " in " + image.module();
    p.compressed += image.compressed_bytes();
    p.uncompressed += image.uncompressed_bytes();
  }
  for (auto& [key, part] : images) out.push_back(std::move(part));
  for (const auto& p : manifest.bytes().largest()) {
    out.push_back({p.name(), p.compressed_bytes(), p.uncompressed_bytes()});
  }
  std::stable_sort(out.begin(), out.end(), [](const SizePart& x, const SizePart& y) {
    return x.compressed > y.compressed;
  });
  return out;
}

std::string SizeText(int64_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  if (bytes >= (int64_t{1} << 30)) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1 << 30));
  } else if (bytes >= (1 << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1 << 20));
  } else if (bytes >= (1 << 10)) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / (1 << 10));
  } else {
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  }
  return buf;
}

std::string LargestPartsText(const farm::v1::ArchManifest& manifest, size_t n) {
  std::string out;
  std::vector<SizePart> parts = WheelSizeParts(manifest);
  for (size_t i = 0; i < parts.size() && i < n; ++i) {
    out += (out.empty() ? "" : ", ") + parts[i].what + " " + SizeText(parts[i].compressed);
  }
  return out;
}

std::string FormatWheelBytes(const farm::v1::ArchManifest& manifest, const std::string& indent) {
  if (!manifest.has_bytes()) return "";
  const farm::v1::WheelBytes& b = manifest.bytes();
  // What nvcc's compression left in the fatbinary, per part of compressed images.
  std::map<std::string, int64_t> fatbin;
  for (const auto& image : manifest.images()) {
    if (image.compressed()) fatbin[image.arch() + " in " + image.module()] += image.fatbin_bytes();
  }
  std::string out = indent + "where the bytes go (in the wheel / unpacked):\n";
  auto line = [&](const std::string& what, int64_t c, int64_t u, const std::string& note) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%s  %-48s %10s / %-10s%s\n", indent.c_str(), what.c_str(),
                  SizeText(c).c_str(), SizeText(u).c_str(), note.c_str());
    out += buf;
  };
  for (const SizePart& p : WheelSizeParts(manifest)) {
    auto packed = fatbin.find(p.what);
    line(p.what, p.compressed, p.uncompressed,
         packed == fatbin.end() ? "" : "  (nvcc-compressed to " + SizeText(packed->second) + ")");
  }
  line("rest", b.rest().compressed_bytes(), b.rest().uncompressed_bytes(), "");
  line("wheel", b.wheel_bytes(), b.uncompressed_bytes(), "");
  return out;
}

std::optional<Problem> SizeBudgetProblem(const farm::v1::ArchManifest& manifest,
                                         int64_t wheel_bytes, int64_t budget) {
  if (budget <= 0 || wheel_bytes <= budget) return std::nullopt;
  std::string detail = "the wheel is " + SizeText(wheel_bytes) + " (" +
                       std::to_string(wheel_bytes) + " bytes), over the recipe's size_budget of " +
                       SizeText(budget) + " (" + std::to_string(budget) + " bytes)";
  std::string parts = LargestPartsText(manifest);
  if (!parts.empty()) detail += "; largest parts: " + parts;
  return Problem{"size-budget", "", detail};
}

}  // namespace farm::wheel
