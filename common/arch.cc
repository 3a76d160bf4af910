#include "common/arch.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace farm::arch {
namespace {

// One compute capability nvcc has known, with the toolkit range that compiles it.
// `removed_in` {0, 0} means still supported by the newest toolkit.
struct ArchRule {
  Version cc;
  Version min_cuda;
  Version removed_in;
  const char* removal_note;
};

// The farm's rule table; docs/arch-rules.md explains each row. Older archs get 11.8 as
// their floor because the farm never installs an older toolkit.
const std::vector<ArchRule>& ArchRules() {
  static const std::vector<ArchRule> kRules = {
      {{3, 5}, {11, 8}, {12, 0}, "CUDA 12.0 dropped sm_35 and sm_37"},
      {{3, 7}, {11, 8}, {12, 0}, "CUDA 12.0 dropped sm_35 and sm_37"},
      {{5, 0}, {11, 8}, {13, 0}, "CUDA 13.0 dropped sm_50..sm_72"},
      {{5, 2}, {11, 8}, {13, 0}, "CUDA 13.0 dropped sm_50..sm_72"},
      {{5, 3}, {11, 8}, {13, 0}, "CUDA 13.0 dropped sm_50..sm_72"},
      {{6, 0}, {11, 8}, {13, 0}, "CUDA 13.0 dropped sm_50..sm_72"},
      {{6, 1}, {11, 8}, {13, 0}, "CUDA 13.0 dropped sm_50..sm_72"},
      {{6, 2}, {11, 8}, {13, 0}, "CUDA 13.0 dropped sm_50..sm_72"},
      {{7, 0}, {11, 8}, {13, 0}, "CUDA 13.0 dropped sm_50..sm_72"},
      {{7, 2}, {11, 8}, {13, 0}, "CUDA 13.0 dropped sm_50..sm_72"},
      {{7, 5}, {11, 8}, {0, 0}, ""},
      {{8, 0}, {11, 8}, {0, 0}, ""},
      {{8, 6}, {11, 8}, {0, 0}, ""},
      {{8, 7}, {11, 8}, {0, 0}, ""},
      {{8, 9}, {12, 4}, {0, 0}, ""},
      {{9, 0}, {12, 3}, {0, 0}, ""},
      {{10, 0}, {12, 8}, {0, 0}, ""},
      {{10, 1}, {12, 8}, {13, 0}, "CUDA 13.0 renamed sm_101 to sm_110"},
      {{10, 3}, {12, 9}, {0, 0}, ""},
      {{11, 0}, {13, 0}, {0, 0}, ""},
      {{12, 0}, {12, 8}, {0, 0}, ""},
      {{12, 1}, {12, 9}, {0, 0}, ""},
  };
  return kRules;
}

constexpr Version kFamilyMinCuda{12, 9};
constexpr Version kArchSpecificMinCc{9, 0};
constexpr Version kFamilyMinCc{10, 0};

const ArchRule* FindRule(const Version& cc) {
  for (const ArchRule& rule : ArchRules()) {
    if (rule.cc == cc) return &rule;
  }
  return nullptr;
}

std::string KnownArchText() {
  std::string out;
  for (const ArchRule& rule : ArchRules()) {
    if (!out.empty()) out += ", ";
    out += rule.cc.ToString();
  }
  return out;
}

bool AllDigits(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// Parses a small decimal number; false on anything but 1..3 digits.
bool ParseSmallInt(std::string_view s, int* out) {
  if (!AllDigits(s) || s.size() > 3) return false;
  std::from_chars(s.data(), s.data() + s.size(), *out);
  return true;
}

std::string SuffixText(char suffix) { return suffix ? std::string(1, suffix) : ""; }

// Splits a trailing 'a' or 'f' off `s`.
char TakeSuffix(std::string_view* s) {
  if (!s->empty() && (s->back() == 'a' || s->back() == 'f')) {
    char c = s->back();
    s->remove_suffix(1);
    return c;
  }
  return '\0';
}

std::string EntryError(std::string_view entry, std::string_view list) {
  return "invalid arch list entry \"" + std::string(entry) + "\" in \"" + std::string(list) +
         "\": expected N.M with an optional a or f suffix and +PTX (\"9.0\", \"12.0a\", "
         "\"8.6+PTX\"), sm_NN or compute_NN";
}

// Parses the "N.M", "sm_NN" or "compute_NN" part of an entry (suffix already removed).
bool ParseCcPart(std::string_view s, Target* t) {
  auto digits_form = [&](std::string_view d) {
    if (d.size() < 2 || d.size() > 3 || !AllDigits(d)) return false;
    ParseSmallInt(d.substr(0, d.size() - 1), &t->major);
    t->minor = d.back() - '0';
    return true;
  };
  if (s.starts_with("sm_")) {
    t->sass = true;
    return digits_form(s.substr(3));
  }
  if (s.starts_with("compute_")) {
    t->sass = false;
    t->ptx = true;
    return digits_form(s.substr(8));
  }
  size_t dot = s.find('.');
  if (dot == std::string_view::npos) return false;
  return ParseSmallInt(s.substr(0, dot), &t->major) && s.size() - dot == 2 &&
         ParseSmallInt(s.substr(dot + 1), &t->minor);
}

Result<Target> ParseEntry(std::string_view entry, std::string_view list) {
  Target t;
  std::string_view s = entry;
  if (s.ends_with("+PTX")) {
    t.ptx = true;
    s.remove_suffix(4);
  }
  t.suffix = TakeSuffix(&s);
  if (!ParseCcPart(s, &t)) return Status::InvalidArgument(EntryError(entry, list));
  if (FindRule(t.cc()) == nullptr) {
    return Status::InvalidArgument("unknown compute capability " + t.cc().ToString() +
                                   " in arch list entry \"" + std::string(entry) +
                                   "\" (known: " + KnownArchText() + ")");
  }
  if (t.suffix == 'a' && t.cc() < kArchSpecificMinCc) {
    return Status::InvalidArgument("arch list entry \"" + std::string(entry) +
                                   "\": the 'a' suffix needs compute capability >= 9.0");
  }
  if (t.suffix == 'f' && t.cc() < kFamilyMinCc) {
    return Status::InvalidArgument("arch list entry \"" + std::string(entry) +
                                   "\": the 'f' suffix needs compute capability >= 10.0");
  }
  return t;
}

// Adds `t` to `out`, merging its images into an earlier entry for the same code.
void AddMerged(const Target& t, std::vector<Target>* out) {
  for (Target& existing : *out) {
    if (existing.cc() == t.cc() && existing.suffix == t.suffix) {
      existing.ptx = existing.ptx || t.ptx;
      existing.sass = existing.sass || t.sass;
      return;
    }
  }
  out->push_back(t);
}

bool SameFamilyAtOrAfter(const Image& image, const Version& device) {
  return device.major == image.major && device.minor >= image.minor;
}

std::string JoinVersions(const std::vector<Version>& versions) {
  std::string out;
  for (const Version& v : versions) {
    if (!out.empty()) out += ", ";
    out += v.ToString();
  }
  return out;
}

// "2.8.0+cu128" -> "2.8.0"; local version labels do not change the release line.
std::string_view StripLocal(std::string_view v) { return v.substr(0, v.find('+')); }

}  // namespace

std::string Version::ToString() const {
  return std::to_string(major) + "." + std::to_string(minor);
}

Result<Version> ParseVersion(std::string_view text) {
  Version v;
  size_t dot = text.find('.');
  std::string_view rest = dot == std::string_view::npos ? "" : text.substr(dot + 1);
  std::string_view minor = rest.substr(0, rest.find('.'));
  std::string_view patch =
      rest.find('.') == std::string_view::npos ? "0" : rest.substr(rest.find('.') + 1);
  if (dot == std::string_view::npos || !ParseSmallInt(text.substr(0, dot), &v.major) ||
      !ParseSmallInt(minor, &v.minor) || !AllDigits(patch)) {
    return Status::InvalidArgument("invalid version \"" + std::string(text) +
                                   "\": expected MAJOR.MINOR such as \"12.8\"");
  }
  return v;
}

std::string Target::ToString() const {
  if (!sass) return ComputeName(*this);
  return cc().ToString() + SuffixText(suffix) + (ptx ? "+PTX" : "");
}

std::vector<std::string_view> ArchListEntries(std::string_view list) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < list.size()) {
    auto is_sep = [](char c) { return c == ';' || std::isspace(static_cast<unsigned char>(c)); };
    if (is_sep(list[i])) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < list.size() && !is_sep(list[end])) ++end;
    out.push_back(list.substr(i, end - i));
    i = end;
  }
  return out;
}

Result<std::vector<Target>> ParseArchList(std::string_view list) {
  std::vector<Target> out;
  for (std::string_view entry : ArchListEntries(list)) {
    FARM_ASSIGN_OR_RETURN(Target t, ParseEntry(entry, list));
    AddMerged(t, &out);
  }
  if (out.empty()) return Status::InvalidArgument("empty arch list");
  return out;
}

std::string FormatArchList(const std::vector<Target>& targets) {
  std::string out;
  for (const Target& t : targets) {
    if (!out.empty()) out += ";";
    out += t.ToString();
  }
  return out;
}

std::string SassName(const Target& t) {
  return "sm_" + std::to_string(t.major * 10 + t.minor) + SuffixText(t.suffix);
}

std::string ComputeName(const Target& t) {
  return "compute_" + std::to_string(t.major * 10 + t.minor) + SuffixText(t.suffix);
}

std::string DisplayName(const Target& t) { return t.sass ? SassName(t) : ComputeName(t); }

std::vector<std::string> GencodeFlags(const Target& t) {
  std::vector<std::string> flags;
  const std::string arch = "-gencode=arch=" + ComputeName(t) + ",code=";
  if (t.sass) flags.push_back(arch + SassName(t));
  if (t.ptx) flags.push_back(arch + ComputeName(t));
  return flags;
}

Version MinCuda(const Target& t) {
  const ArchRule* rule = FindRule(t.cc());
  Version min = rule ? rule->min_cuda : Version{0, 0};
  if (t.suffix == 'f') min = std::max(min, kFamilyMinCuda);
  return min;
}

Status CheckCuda(const Target& t, const Version& cuda) {
  const ArchRule* rule = FindRule(t.cc());
  if (rule == nullptr) {
    return Status::InvalidArgument("unknown compute capability " + t.cc().ToString());
  }
  Version min = MinCuda(t);
  if (cuda < min) {
    return Status::InvalidArgument(DisplayName(t) + " needs CUDA >= " + min.ToString());
  }
  if (rule->removed_in.major != 0 && cuda >= rule->removed_in) {
    return Status::InvalidArgument(DisplayName(t) + " is not supported by CUDA " + cuda.ToString() +
                                   " (" + rule->removal_note + ")");
  }
  return Status::Ok();
}

Status CheckCuda(const std::vector<Target>& targets, const Version& cuda) {
  for (const Target& t : targets) FARM_RETURN_IF_ERROR(CheckCuda(t, cuda));
  return Status::Ok();
}

std::string Image::ToString() const {
  Target t{major, minor, suffix, kind == Kind::kPtx, kind == Kind::kSass};
  return kind == Kind::kSass ? SassName(t) : ComputeName(t);
}

Result<Image> ParseImage(std::string_view name) {
  std::string_view s = name;
  char suffix = TakeSuffix(&s);
  Target t;
  if ((!s.starts_with("sm_") && !s.starts_with("compute_")) || !ParseCcPart(s, &t)) {
    return Status::InvalidArgument("invalid code image name \"" + std::string(name) +
                                   "\": expected sm_NN or compute_NN with an optional a or f");
  }
  Image image;
  image.kind = t.sass ? Image::Kind::kSass : Image::Kind::kPtx;
  image.major = t.major;
  image.minor = t.minor;
  image.suffix = suffix;
  return image;
}

std::vector<Image> ImagesOf(const Target& t) {
  std::vector<Image> images;
  if (t.sass) images.push_back({Image::Kind::kSass, t.major, t.minor, t.suffix});
  if (t.ptx) images.push_back({Image::Kind::kPtx, t.major, t.minor, t.suffix});
  return images;
}

bool CanLoad(const Image& image, const Version& device) {
  const Version own{image.major, image.minor};
  if (image.suffix == 'a') return device == own;
  if (image.suffix == 'f') return SameFamilyAtOrAfter(image, device);
  if (image.kind == Image::Kind::kSass) return SameFamilyAtOrAfter(image, device);
  return device >= own;  // plain PTX is JIT-compiled forward
}

const std::vector<KnownCc>& KnownCcs() {
  static const std::vector<KnownCc> kCcs = {
      {{7, 5}, "T4, RTX 2080 Ti, Quadro RTX 6000"},
      {{8, 0}, "A100, A30"},
      {{8, 6}, "RTX 3090, A10, A40, RTX A6000"},
      {{8, 7}, "Jetson AGX Orin"},
      {{8, 9}, "L4, L40S, RTX 4090, RTX 6000 Ada"},
      {{9, 0}, "H100, H200, GH200"},
      {{10, 0}, "B200, GB200"},
      {{10, 3}, "B300, GB300"},
      {{11, 0}, "Jetson Thor"},
      {{12, 0}, "RTX 5090, RTX PRO 6000 Blackwell"},
      {{12, 1}, "GB10 (DGX Spark)"},
  };
  return kCcs;
}

std::string GpusOf(const Version& cc) {
  for (const KnownCc& known : KnownCcs()) {
    if (known.cc == cc) return known.gpus;
  }
  return "";
}

std::vector<Version> RunsOn(const std::vector<Image>& images) {
  std::vector<Version> out;
  for (const KnownCc& known : KnownCcs()) {
    bool loads = std::any_of(images.begin(), images.end(),
                             [&](const Image& image) { return CanLoad(image, known.cc); });
    if (loads) out.push_back(known.cc);
  }
  return out;
}

std::vector<Version> RunsOn(const std::vector<Target>& targets) {
  std::vector<Image> images;
  for (const Target& t : targets) {
    for (const Image& image : ImagesOf(t)) images.push_back(image);
  }
  return RunsOn(images);
}

const std::vector<TorchRelease>& TorchReleases() {
  static const std::vector<TorchRelease> kReleases = {
      {{2, 6}, {{11, 8}, {12, 4}, {12, 6}}},  {{2, 7}, {{11, 8}, {12, 6}, {12, 8}}},
      {{2, 8}, {{12, 6}, {12, 8}, {12, 9}}},  {{2, 9}, {{12, 6}, {12, 8}, {13, 0}}},
      {{2, 10}, {{12, 6}, {12, 8}, {13, 0}}}, {{2, 11}, {{12, 6}, {12, 8}, {13, 0}}},
  };
  return kReleases;
}

Status CheckTorchCuda(std::string_view torch, std::string_view cuda) {
  if (torch.empty()) return Status::Ok();
  FARM_ASSIGN_OR_RETURN(Version torch_version, ParseVersion(StripLocal(torch)));
  FARM_ASSIGN_OR_RETURN(Version cuda_version, ParseVersion(cuda));
  for (const TorchRelease& release : TorchReleases()) {
    if (release.torch != torch_version) continue;
    if (std::find(release.cuda.begin(), release.cuda.end(), cuda_version) != release.cuda.end()) {
      return Status::Ok();
    }
    return Status::InvalidArgument("torch " + torch_version.ToString() +
                                   " is not released for CUDA " + cuda_version.ToString() +
                                   " (torch " + torch_version.ToString() + " ships for CUDA " +
                                   JoinVersions(release.cuda) + ")");
  }
  return Status::InvalidArgument(
      "torch " + torch_version.ToString() +
      " is not in the torch/CUDA table (known: " + TorchReleases().front().torch.ToString() +
      " .. " + TorchReleases().back().torch.ToString() + ")");
}

}  // namespace farm::arch
