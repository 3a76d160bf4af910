#include "common/wheel/manifest.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <tuple>

#include "common/wheel/elf/elf_reader.h"

namespace farm::wheel {
namespace {

constexpr uint32_t kTkinfoNoteType = 2000;
constexpr uint32_t kEfCudaAcceleratorsV7 = 0x800;

// "sm_90a" at the start of `s`: fills the number and suffix; false otherwise.
bool ParseSmToken(std::string_view s, uint32_t* sm, char* suffix) {
  if (s.substr(0, 3) != "sm_") return false;
  size_t i = 3;
  uint32_t v = 0;
  while (i < s.size() && i < 7 && std::isdigit(static_cast<unsigned char>(s[i]))) {
    v = v * 10 + static_cast<uint32_t>(s[i++] - '0');
  }
  if (i == 3) return false;
  *sm = v;
  *suffix = (i < s.size() && (s[i] == 'a' || s[i] == 'f')) ? s[i] : '\0';
  if (*suffix != '\0') ++i;
  return i == s.size() || !std::isalnum(static_cast<unsigned char>(s[i]));
}

// The tool, its toolkit release and "-arch sm_XX[a|f]" recorded by ptxas / nvlink in
// .note.nv.tkinfo.
struct ToolInfo {
  std::string producer;
  std::string toolkit;  // "13.0", from "Cuda compilation tools, release 13.0, V13.0.88"
  bool has_arch = false;
  uint32_t sm = 0;
  char suffix = '\0';
};

// The NUL-terminated string at `offset` of the strings after the six-u32 header, at most
// `max` bytes; "" when the offset is out of the note.
std::string_view NoteString(std::string_view desc, uint32_t offset, size_t max) {
  uint64_t at = 24 + uint64_t{offset};
  if (at >= desc.size()) return {};
  std::string_view rest = desc.substr(at);
  return rest.substr(0, std::min(rest.find('\0'), max));
}

// "13.0" from "Cuda compilation tools, release 13.0, V13.0.88"; "" when it names none.
std::string ToolkitRelease(std::string_view version) {
  constexpr std::string_view kRelease = "release ";
  size_t at = version.find(kRelease);
  if (at == std::string_view::npos) return "";
  std::string_view v = version.substr(at + kRelease.size());
  size_t end = 0;
  int dots = 0;
  while (end < v.size() && end < 8 &&
         (std::isdigit(static_cast<unsigned char>(v[end])) || (v[end] == '.' && dots++ == 0))) {
    ++end;
  }
  std::string out(v.substr(0, end));
  bool ok = dots == 1 && !out.empty() && out.front() != '.' && out.back() != '.';
  return ok ? out : "";
}

ToolInfo ParseToolInfo(std::string_view desc) {
  ToolInfo info;
  // Header of six u32 (2, 0, then the offsets of the tool name, its version, its build and
  // its arguments in the strings after it).
  if (desc.size() >= 24) {
    info.producer = std::string(NoteString(desc, LoadU32(desc, 8), 32));
    info.toolkit = ToolkitRelease(NoteString(desc, LoadU32(desc, 12), 128));
  }
  for (std::string_view key : {"-arch ", "-arch=", "--gpu-name "}) {
    size_t pos = desc.find(key);
    if (pos == desc.npos) continue;
    std::string_view token = desc.substr(pos + key.size());
    token = token.substr(0, std::min(token.find_first_of(std::string_view(" \0", 2)), size_t{16}));
    if (ParseSmToken(token, &info.sm, &info.suffix)) {
      info.has_arch = true;
      break;
    }
  }
  return info;
}

// Numeric SM of a cubin from its ELF header; 0 when the ABI version is unknown.
uint32_t CubinSm(const ElfFile& cubin) {
  if (cubin.abi_version() == 7) return cubin.flags() & 0xff;
  if (cubin.abi_version() == 8) return (cubin.flags() >> 8) & 0xff;
  return 0;
}

char SuffixFromFlags(uint64_t flags) {
  if (flags & kFatbinFlagArchSpecific) return 'a';
  if (flags & kFatbinFlagFamilySpecific) return 'f';
  return '\0';
}

Status ReadCubin(const FatbinEntry& e, std::string_view payload, CodeImage* image) {
  FARM_ASSIGN_OR_RETURN(ElfFile cubin, ElfFile::Parse(payload));
  if (cubin.machine() != kElfMachineCuda) {
    return Status::DataLoss("cubin has e_machine " + std::to_string(cubin.machine()) +
                            ", not EM_CUDA (190)");
  }
  uint32_t elf_sm = CubinSm(cubin);
  if (elf_sm != 0 && elf_sm != e.sm) {
    return Status::DataLoss("cubin e_flags say sm_" + std::to_string(elf_sm) +
                            " but the fatbin entry says sm_" + std::to_string(e.sm));
  }
  image->suffix_source = "fatbin-flags";
  image->image.suffix = SuffixFromFlags(e.flags);
  if (cubin.abi_version() == 7 && (cubin.flags() & kEfCudaAcceleratorsV7)) {
    image->suffix_source = "e_flags";
    image->image.suffix = 'a';
  }
  const ElfSection* note = cubin.Find(".note.nv.tkinfo");
  if (note == nullptr) return Status::Ok();
  FARM_ASSIGN_OR_RETURN(std::vector<ElfNote> notes, cubin.Notes(*note));
  for (const ElfNote& n : notes) {
    if (n.type != kTkinfoNoteType) continue;
    ToolInfo info = ParseToolInfo(n.desc);
    image->producer = info.producer;
    image->toolkit = info.toolkit;
    if (!info.has_arch) continue;
    if (info.sm != e.sm) {
      return Status::DataLoss("cubin tool arguments say sm_" + std::to_string(info.sm) +
                              " but the fatbin entry says sm_" + std::to_string(e.sm));
    }
    image->image.suffix = info.suffix;
    image->suffix_source = "tkinfo";
  }
  return Status::Ok();
}

// The first token after `directive` at the start of a line, or "".
std::string_view Directive(std::string_view text, std::string_view directive) {
  size_t pos = 0;
  while ((pos = text.find(directive, pos)) != text.npos) {
    bool line_start =
        pos == 0 || text[pos - 1] == '\n' || text[pos - 1] == ' ' || text[pos - 1] == '\t';
    size_t after = pos + directive.size();
    if (line_start && after < text.size() && (text[after] == ' ' || text[after] == '\t')) {
      size_t b = text.find_first_not_of(" \t", after);
      size_t e = b == text.npos ? text.npos : text.find_first_of(" \t,\r\n", b);
      return b == text.npos ? std::string_view() : text.substr(b, e == text.npos ? e : e - b);
    }
    pos = after;
  }
  return {};
}

Status ReadPtx(const FatbinEntry& e, std::string_view payload, CodeImage* image) {
  while (!payload.empty() && payload.back() == '\0') payload.remove_suffix(1);
  std::string_view target = Directive(payload, ".target");
  uint32_t sm = 0;
  char suffix = '\0';
  if (!ParseSmToken(target, &sm, &suffix)) {
    return Status::DataLoss("PTX has no readable .target line");
  }
  if (sm != e.sm) {
    return Status::DataLoss("PTX .target sm_" + std::to_string(sm) +
                            " disagrees with the fatbin entry's sm_" + std::to_string(e.sm));
  }
  image->image.suffix = suffix;
  image->suffix_source = "ptx-target";
  image->ptx_version = std::string(Directive(payload, ".version"));
  return Status::Ok();
}

Status VisitEntry(const FatbinEntry& e, std::string_view payload, const std::string& section,
                  bool measure, ModuleManifest* out) {
  if (e.kind != kFatbinKindElf && e.kind != kFatbinKindPtx) {
    ++out->ignored_entries;
    return Status::Ok();
  }
  CodeImage image;
  image.section = section;
  image.container = e.container;
  image.index = e.index;
  image.flags = e.flags;
  image.header_size = e.header_size;
  image.compression = e.compression;
  image.payload_bytes = payload.size();
  image.fatbin_bytes = uint64_t{e.header_size} + e.padded_size;
  if (measure) {
    // A payload nvcc compressed does not deflate further; a plain one does, a lot.
    image.wheel_bytes = e.header_size + (e.compression == Compression::kNone
                                             ? static_cast<uint64_t>(DeflatedSize(payload))
                                             : e.compressed_size);
  }
  image.image.kind = e.kind == kFatbinKindElf ? arch::Image::Kind::kSass : arch::Image::Kind::kPtx;
  image.image.major = static_cast<int>(e.sm / 10);
  image.image.minor = static_cast<int>(e.sm % 10);
  Status s = e.kind == kFatbinKindElf ? ReadCubin(e, payload, &image) : ReadPtx(e, payload, &image);
  if (!s.ok()) {
    return s.WithContext(section + " container " + std::to_string(e.container) + " entry " +
                         std::to_string(e.index));
  }
  image.name = image.image.ToString();
  out->images.push_back(std::move(image));
  return Status::Ok();
}

// The name of an image of `module` of the same compute capability and kind as `want` but
// another suffix (sm_90a for sm_90), or "".
std::string SameCc(const ModuleManifest& module, const arch::Image& want) {
  for (const CodeImage& have : module.images) {
    const arch::Image& h = have.image;
    if (h.kind == want.kind && h.major == want.major && h.minor == want.minor &&
        h.suffix != want.suffix) {
      return h.ToString();
    }
  }
  return "";
}

}  // namespace

Result<ModuleManifest> ReadModuleManifest(std::string_view elf_bytes, const std::string& module,
                                          const FatbinLimits& limits, bool measure_wheel_bytes) {
  ModuleManifest out;
  out.module = module;
  Result<ElfFile> elf = ElfFile::Parse(elf_bytes);
  if (!elf.ok()) return elf.status().WithContext(module);
  for (const ElfSection& section : elf->sections()) {
    if (section.name != ".nv_fatbin" && section.name != "__nv_relfatbin") continue;
    Status s =
        WalkFatbin(elf->Data(section), limits, [&](const FatbinEntry& e, std::string_view payload) {
          return VisitEntry(e, payload, section.name, measure_wheel_bytes, &out);
        });
    if (!s.ok()) return s.WithContext(module + " " + section.name);
  }
  std::set<std::string> names;
  std::vector<arch::Image> images;
  for (const CodeImage& image : out.images) {
    names.insert(image.name);
    images.push_back(image.image);
  }
  out.archs.assign(names.begin(), names.end());
  out.runs_on = arch::RunsOn(images);
  return out;
}

void FinishManifest(const std::vector<arch::Target>& requested, ArchManifest* manifest) {
  manifest->runs_on.clear();
  manifest->missing.clear();
  manifest->unrequested.clear();
  std::vector<arch::Image> wanted;
  for (const arch::Target& t : requested) {
    for (const arch::Image& image : arch::ImagesOf(t)) wanted.push_back(image);
  }
  bool any_device_code = false;
  for (const ModuleManifest& m : manifest->modules) {
    if (!m.has_device_code()) continue;
    if (!any_device_code) {
      manifest->runs_on = m.runs_on;
    } else {
      std::erase_if(manifest->runs_on, [&](const arch::Version& v) {
        return std::find(m.runs_on.begin(), m.runs_on.end(), v) == m.runs_on.end();
      });
    }
    any_device_code = true;
    for (const arch::Target& t : requested) {
      for (const arch::Image& want : arch::ImagesOf(t)) {
        bool found = std::any_of(m.images.begin(), m.images.end(),
                                 [&](const CodeImage& have) { return have.image == want; });
        if (!found) manifest->missing.push_back({m.module, want.ToString(), SameCc(m, want)});
      }
    }
    if (wanted.empty()) continue;
    std::vector<arch::Image> extra;
    for (const std::string& name : m.archs) {
      auto image = arch::ParseImage(name);
      if (image.ok() && std::find(wanted.begin(), wanted.end(), *image) == wanted.end()) {
        extra.push_back(*image);
      }
    }
    std::sort(extra.begin(), extra.end(), [](const arch::Image& a, const arch::Image& b) {
      return std::tie(a.major, a.minor, a.kind, a.suffix) <
             std::tie(b.major, b.minor, b.kind, b.suffix);
    });
    for (const arch::Image& image : extra) {
      manifest->unrequested.push_back({m.module, image.ToString()});
    }
  }
  if (any_device_code) return;
  for (const arch::Target& t : requested) {
    for (const arch::Image& want : arch::ImagesOf(t)) {
      manifest->missing.push_back({"", want.ToString()});
    }
  }
}

std::string MissingImage::ToString() const {
  if (module.empty()) return "no module has CUDA device code; " + image + " requested";
  std::string out = module + " lacks " + image;
  auto held = arch::ParseImage(instead);
  if (!held.ok()) return out;
  std::string runs;
  for (const arch::Version& cc : arch::RunsOn(std::vector<arch::Image>{*held})) {
    runs += (runs.empty() ? "" : ", ") + cc.ToString();
  }
  arch::Target target{held->major, held->minor, held->suffix};
  const std::string list = target.ToString();
  return out + "; it holds " + instead + " instead, which runs on cc " + runs +
         ": the package compiles that code for it. Ask for what it builds with matrix.arch_lists: "
         "[\"" +
         list + "\"]; if the package refuses \"" + list +
         "\" in TORCH_CUDA_ARCH_LIST, give it the list it accepts in the build command "
         "(TORCH_CUDA_ARCH_LIST=" +
         std::to_string(held->major) + "." + std::to_string(held->minor) +
         " \"$FARM_PYTHON\" -m pip wheel ...; docs/recipes.md)";
}

}  // namespace farm::wheel
