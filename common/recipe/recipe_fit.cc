// size_budget, fatbin_compression and matrix.families of a recipe (recipe_fit.h,
// families.h).
#include "common/recipe/recipe_fit.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <utility>

#include "common/recipe/recipe_internal.h"
#include "common/strings.h"
#include "common/wheel/fatbin_compression.h"
#include "common/wheel/sm_families.h"

namespace farm::recipe {
namespace {

constexpr std::pair<std::string_view, double> kUnits[] = {{"", 1},
                                                          {"b", 1},
                                                          {"kib", 1024.0},
                                                          {"mib", 1048576.0},
                                                          {"gib", 1073741824.0},
                                                          {"tib", 1099511627776.0},
                                                          {"ki", 1024.0},
                                                          {"mi", 1048576.0},
                                                          {"gi", 1073741824.0},
                                                          {"ti", 1099511627776.0},
                                                          {"kb", 1e3},
                                                          {"mb", 1e6},
                                                          {"gb", 1e9},
                                                          {"tb", 1e12},
                                                          {"k", 1e3},
                                                          {"m", 1e6},
                                                          {"g", 1e9},
                                                          {"t", 1e12}};

// The largest budget a recipe may name: far past any upload limit, well inside int64.
constexpr double kMaxBytes = 1e15;

// `s` in lower case, its spaces removed ("100 MiB" -> "100mib").
std::string LowerNoSpaces(std::string_view s) {
  std::string out = AsciiLower(s);
  out.erase(std::remove(out.begin(), out.end(), ' '), out.end());
  return out;
}

}  // namespace

Result<int64_t> ParseByteSize(std::string_view text) {
  const std::string t = LowerNoSpaces(text);
  size_t digits = 0;
  while (digits < t.size() &&
         (std::isdigit(static_cast<unsigned char>(t[digits])) || t[digits] == '.')) {
    ++digits;
  }
  double number = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + digits, number);
  auto bad = [&] {
    return Status::InvalidArgument("\"" + std::string(text) +
                                   "\" is not a size such as \"100 MiB\", \"2 GiB\" or \"500 MB\"");
  };
  if (digits == 0 || ec != std::errc() || end != t.data() + digits) return bad();
  std::string_view unit = std::string_view(t).substr(digits);
  for (const auto& [name, scale] : kUnits) {
    if (unit != name) continue;
    double bytes = std::floor(number * scale);
    if (bytes < 1 || bytes > kMaxBytes) {
      return Status::InvalidArgument("size \"" + std::string(text) +
                                     "\" must be from 1 byte to 1 PB");
    }
    return static_cast<int64_t>(bytes);
  }
  return bad();
}

Status ParseFitFields(const Section& top, farm::v1::Recipe* recipe) {
  if (const Field* f = top.Find("size_budget")) {
    FARM_ASSIGN_OR_RETURN(std::string text, ReadString(top.sink(), *f));
    Result<int64_t> bytes = ParseByteSize(text);
    if (!bytes.ok())
      return top.sink().At(f->value_pos(), "\"size_budget\": " + bytes.status().message());
    recipe->set_size_budget_bytes(*bytes);
  }
  std::string mode;
  FARM_RETURN_IF_ERROR(top.GetString("fatbin_compression", &mode));
  if (!mode.empty() && !wheel::IsFatbinCompressionMode(mode)) {
    return top.sink().At(top.Find("fatbin_compression")->value_pos(),
                         "\"fatbin_compression\" must be size, balance, speed or none (nvcc's "
                         "--compress-mode, CUDA 12.8 and later), got \"" +
                             mode + "\"");
  }
  recipe->set_fatbin_compression(mode);
  return Status::Ok();
}

Status ParseFamiliesField(const Section& matrix, farm::v1::MatrixAxes* out) {
  std::vector<Item> names;
  FARM_RETURN_IF_ERROR(matrix.GetStringList("families", &names));
  for (const Item& name : names) {
    Status valid = wheel::ParseFamily(name.text).status();
    if (!valid.ok()) return matrix.sink().At(name.pos, "matrix.families: " + valid.message());
    out->add_families(name.text);
  }
  Result<std::vector<wheel::SmFamily>> families = wheel::ParseFamilies(out->families());
  if (!families.ok()) {
    return matrix.sink().At(names.back().pos, "matrix.families: " + families.status().message());
  }
  if (names.empty()) return Status::Ok();
  for (const std::string& list : out->arch_lists()) {
    Status split = wheel::SplitArchList(list, *families).status();
    if (!split.ok()) {
      return matrix.sink().At(
          matrix.Find("families")->value_pos(),
          "matrix.families: " + split.message() + "; add a family that holds it");
    }
  }
  return Status::Ok();
}

}  // namespace farm::recipe
