#include "common/recipe/matrix.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <set>

#include "common/arch.h"
#include "common/wheel/sm_families.h"

namespace farm::recipe {
namespace {

constexpr size_t kAxes = 5;
constexpr size_t kArchAxis = 3;
using Cell = std::array<std::string, kAxes>;
using Values = std::vector<std::string>;
using Rule = std::vector<std::pair<size_t, std::string>>;  // axis index -> value

// Labels in cell descriptions: one cell has one arch list.
constexpr std::array<std::string_view, kAxes> kCellLabels = {"python", "torch", "cuda", "arch_list",
                                                             "platform"};

const google::protobuf::RepeatedPtrField<std::string>& AxisValues(const farm::v1::MatrixAxes& m,
                                                                  size_t axis) {
  switch (axis) {
    case 0:
      return m.python();
    case 1:
      return m.torch();
    case 2:
      return m.cuda();
    case 3:
      return m.arch_lists();
    default:
      return m.platform();
  }
}

Cell FromProto(const farm::v1::MatrixCell& c) {
  return {c.python(), c.torch(), c.cuda(), c.arch_list(), c.platform()};
}

farm::v1::MatrixCell ToProto(const Cell& c) {
  farm::v1::MatrixCell cell;
  cell.set_python(c[0]);
  cell.set_torch(c[1]);
  cell.set_cuda(c[2]);
  cell.set_arch_list(c[3]);
  cell.set_platform(c[4]);
  return cell;
}

bool Contains(const Values& values, const std::string& v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

std::string Join(const Values& values) {
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "" : ", ") + v;
  return out;
}

std::string AxisValue(size_t axis, const std::string& value) {
  return std::string(kCellLabels[axis]) + "=" + value;
}

bool IsVersion(std::string_view value, bool allow_patch) {
  Result<arch::Version> v = arch::ParseVersion(value);
  return v.ok() && (allow_patch || v->ToString() == value);
}

bool IsPlatformTag(std::string_view value) {
  return !value.empty() && std::islower(static_cast<unsigned char>(value[0])) &&
         std::all_of(value.begin(), value.end(), [](char c) {
           return std::islower(static_cast<unsigned char>(c)) ||
                  std::isdigit(static_cast<unsigned char>(c)) || c == '_';
         });
}

// The targets of every arch list the recipe supports, without duplicates, in listed order.
std::vector<arch::Target> SupportedTargets(const Values& sup) {
  std::vector<arch::Target> out;
  for (const std::string& list : sup) {
    auto targets = arch::ParseArchList(list);
    if (!targets.ok()) continue;
    for (const arch::Target& t : *targets) {
      if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
    }
  }
  return out;
}

// Empty when the requested arch list `value` asks only for targets some arch list of the
// recipe builds (a subset: "12.1a" of "9.0;12.0a;12.1a"); otherwise why not, naming what
// the recipe does build and how to ask for more.
std::string ArchListProblem(const std::string& value, const Values& sup) {
  if (Contains(sup, value)) return "";
  auto requested = arch::ParseArchList(value);
  if (!requested.ok()) return requested.status().message();
  std::vector<arch::Target> supported = SupportedTargets(sup);
  std::vector<std::string> missing, hints;
  for (const arch::Target& t : *requested) {
    if (std::find(supported.begin(), supported.end(), t) != supported.end()) continue;
    missing.push_back(t.ToString());
    for (const arch::Target& s : supported) {
      if (s.cc() == t.cc()) hints.push_back(t.ToString() + " is built as " + s.ToString());
    }
  }
  if (missing.empty()) return "";
  std::string names;
  for (const arch::Target& s : supported) names += (names.empty() ? "" : ", ") + s.ToString();
  std::string out = "the recipe supports arch_lists " + Join(sup) +
                    " (a list of any of their targets works too: " + names + ")";
  if (!hints.empty()) return out + "; " + Join(hints);
  return out + "; to build " + Join(missing) + ", add it to the recipe's matrix.arch_lists";
}

// The values of one axis that the build will use; drops with a reason requested values
// that are malformed or that the recipe does not list (for arch lists: whose targets no
// arch list of the recipe has).
Values EffectiveAxis(size_t axis, const farm::v1::MatrixAxes& requested,
                     const farm::v1::MatrixAxes& supported, std::vector<std::string>* rejected) {
  Values sup(AxisValues(supported, axis).begin(), AxisValues(supported, axis).end());
  const auto& req = AxisValues(requested, axis);
  Values candidates = req.empty() ? sup : Values(req.begin(), req.end());
  Values out;
  for (const std::string& v : candidates) {
    Status valid = CheckAxisValue(AxisNames()[axis], v);
    if (!valid.ok()) {
      rejected->push_back(AxisValue(axis, v) + ": " + valid.message());
    } else if (axis == kArchAxis && !req.empty() && !sup.empty() &&
               !ArchListProblem(v, sup).empty()) {
      rejected->push_back(AxisValue(axis, v) + ": " + ArchListProblem(v, sup));
    } else if (axis != kArchAxis && !req.empty() && !sup.empty() && !Contains(sup, v)) {
      rejected->push_back(AxisValue(axis, v) + ": the recipe supports " +
                          std::string(AxisNames()[axis]) + " " + Join(sup));
    } else if (!Contains(out, v)) {
      out.push_back(v);
    }
  }
  return out;
}

Result<Rule> ToRule(const farm::v1::MatrixRule& proto, const std::string& where) {
  if (proto.match().empty()) return Status::InvalidArgument(where + ": names no axis");
  Rule rule;
  for (const auto& [key, value] : proto.match()) {
    std::string_view axis = CanonicalAxis(key);
    if (axis.empty()) {
      return Status::InvalidArgument(where + ": unknown axis \"" + key +
                                     "\" (expected one of: python, torch, cuda, arch_lists, "
                                     "platform)");
    }
    Status valid = CheckAxisValue(axis, value);
    if (!valid.ok()) return Status::InvalidArgument(where + ": " + valid.message());
    size_t index = std::find(AxisNames().begin(), AxisNames().end(), axis) - AxisNames().begin();
    rule.emplace_back(index, value);
  }
  // Protobuf maps iterate in no fixed order; sort so expansion is deterministic.
  std::sort(rule.begin(), rule.end());
  return rule;
}

Result<std::vector<Rule>> ToRules(
    const google::protobuf::RepeatedPtrField<farm::v1::MatrixRule>& protos,
    const std::string& what) {
  std::vector<Rule> rules;
  for (int i = 0; i < protos.size(); ++i) {
    FARM_ASSIGN_OR_RETURN(Rule r,
                          ToRule(protos[i], "matrix." + what + "[" + std::to_string(i) + "]"));
    rules.push_back(std::move(r));
  }
  return rules;
}

bool Matches(const Rule& rule, const Cell& cell) {
  return std::all_of(rule.begin(), rule.end(),
                     [&](const auto& kv) { return cell[kv.first] == kv.second; });
}

// Fills `cell`'s empty axes from `rule` when no named value contradicts the cell.
bool Extend(const Rule& rule, Cell* cell) {
  for (const auto& [axis, value] : rule) {
    if (!(*cell)[axis].empty() && (*cell)[axis] != value) return false;
  }
  for (const auto& [axis, value] : rule) (*cell)[axis] = value;
  return true;
}

// Cartesian product in axis order; an empty axis contributes one empty value.
std::vector<Cell> Product(const std::array<Values, kAxes>& axes) {
  std::vector<Cell> cells = {Cell{}};
  for (size_t axis = 0; axis < kAxes; ++axis) {
    if (axes[axis].empty()) continue;
    std::vector<Cell> next;
    for (const Cell& c : cells) {
      for (const std::string& v : axes[axis]) {
        next.push_back(c);
        next.back()[axis] = v;
      }
    }
    cells = std::move(next);
  }
  return cells;
}

size_t ProductSize(const std::array<Values, kAxes>& axes) {
  size_t n = 1;
  for (const Values& v : axes) {
    n *= std::max<size_t>(1, v.size());
    if (n > kMaxMatrixCells) return n;
  }
  return n;
}

// Whether the request chose values for `axis` other than the recipe's own list (farmd
// passes the recipe's axes as the request when the client overrides nothing).
bool Narrowed(size_t axis, const farm::v1::MatrixAxes& requested,
              const farm::v1::MatrixAxes& supported) {
  const auto& req = AxisValues(requested, axis);
  const auto& sup = AxisValues(supported, axis);
  return !req.empty() && !std::equal(req.begin(), req.end(), sup.begin(), sup.end());
}

// An include that extends no cell adds cells: its values, and every value of the axes it
// does not name. Values outside an axis the request narrowed are refused.
void AddIncludeCells(const Rule& rule, const std::array<Values, kAxes>& axes,
                     const farm::v1::MatrixAxes& requested, const farm::v1::MatrixAxes& supported,
                     std::vector<Cell>* cells, std::vector<std::string>* rejected) {
  std::array<Values, kAxes> own = axes;
  std::string described;
  for (const auto& [axis, value] : rule) {
    described += (described.empty() ? "" : " ") + AxisValue(axis, value);
    if (Narrowed(axis, requested, supported) && !Contains(axes[axis], value)) {
      rejected->push_back(described + ": include is outside the requested " +
                          std::string(AxisNames()[axis]) + " values");
      return;
    }
    own[axis] = {value};
  }
  for (Cell& c : Product(own)) cells->push_back(std::move(c));
}

// Whether the recipe says its torch `torch` ("2.8" or "2.8.0") is built for `cuda` beyond
// the farm's table (matrix.torch_cuda: a private torch build).
bool RecipeTorchCuda(const farm::v1::MatrixAxes& supported, const std::string& torch,
                     const std::string& cuda) {
  std::string minor = torch.substr(0, torch.find('+'));
  if (size_t dot = minor.find('.'); dot != std::string::npos) {
    minor = minor.substr(0, minor.find('.', dot + 1));
  }
  auto it = supported.torch_cuda().find(minor);
  return it != supported.torch_cuda().end() &&
         std::find(it->second.cuda().begin(), it->second.cuda().end(), cuda) !=
             it->second.cuda().end();
}

// Empty when the cell can be built; the reason otherwise.
std::string CellProblem(const Cell& cell, const farm::v1::MatrixAxes& supported) {
  if (!cell[1].empty() && !cell[2].empty() && !RecipeTorchCuda(supported, cell[1], cell[2])) {
    Status s = arch::CheckTorchCuda(cell[1], cell[2]);
    if (!s.ok()) {
      return s.message() + " (a private torch build for it: matrix.torch_cuda)";
    }
  }
  if (!cell[kArchAxis].empty() && !cell[2].empty()) {
    Result<std::vector<arch::Target>> targets = arch::ParseArchList(cell[kArchAxis]);
    if (!targets.ok()) return targets.status().message();
    Result<arch::Version> cuda = arch::ParseVersion(cell[2]);
    if (!cuda.ok()) return cuda.status().message();
    Status s = arch::CheckCuda(targets.value(), cuda.value());
    if (!s.ok()) return s.message();
  }
  return "";
}

struct Rules {
  std::vector<Rule> include;
  std::vector<Rule> exclude;
};

// Excludes of both the recipe and the request apply; the request's includes replace the
// recipe's when it has any.
Result<Rules> CollectRules(const farm::v1::MatrixAxes& requested,
                           const farm::v1::MatrixAxes& supported) {
  Rules rules;
  FARM_ASSIGN_OR_RETURN(rules.exclude, ToRules(supported.exclude(), "exclude"));
  FARM_ASSIGN_OR_RETURN(std::vector<Rule> more, ToRules(requested.exclude(), "exclude"));
  rules.exclude.insert(rules.exclude.end(), more.begin(), more.end());
  const auto& include = requested.include().empty() ? supported.include() : requested.include();
  FARM_ASSIGN_OR_RETURN(rules.include, ToRules(include, "include"));
  return rules;
}

// Each include extends the cells it fits (those present before any include) or, fitting
// none, adds cells of its own.
void ApplyIncludes(const std::vector<Rule>& includes, const std::array<Values, kAxes>& axes,
                   const farm::v1::MatrixAxes& requested, const farm::v1::MatrixAxes& supported,
                   std::vector<Cell>* cells, std::vector<std::string>* rejected) {
  const size_t base = cells->size();
  for (const Rule& rule : includes) {
    bool extended = false;
    for (size_t i = 0; i < base; ++i) extended = Extend(rule, &(*cells)[i]) || extended;
    if (!extended) AddIncludeCells(rule, axes, requested, supported, cells, rejected);
    if (cells->size() > kMaxMatrixCells) return;  // reported by the caller
  }
}

Status TooLarge() {
  return Status::InvalidArgument("the matrix has more than " + std::to_string(kMaxMatrixCells) +
                                 " cells; narrow its axes");
}

// Each cell whose arch list spans several of `families` becomes one cell per family.
Status SplitFamilies(const google::protobuf::RepeatedPtrField<std::string>& names,
                     std::vector<Cell>* cells, std::vector<std::string>* rejected) {
  if (names.empty()) return Status::Ok();
  FARM_ASSIGN_OR_RETURN(std::vector<wheel::SmFamily> families, wheel::ParseFamilies(names));
  std::vector<Cell> out;
  for (const Cell& c : *cells) {
    if (c[kArchAxis].empty()) {
      out.push_back(c);
      continue;
    }
    Result<std::vector<std::string>> lists = wheel::SplitArchList(c[kArchAxis], families);
    if (!lists.ok()) {
      rejected->push_back(DescribeCell(ToProto(c)) + ": " + lists.status().message());
      continue;
    }
    for (const std::string& list : *lists) {
      out.push_back(c);
      out.back()[kArchAxis] = list;
    }
  }
  *cells = std::move(out);
  return Status::Ok();
}

MatrixExpansion Fail(MatrixExpansion out, const Status& status) {
  out.cells.clear();
  out.rejected.push_back(status.message());
  out.status = status;
  return out;
}

// An arch list as TORCH_CUDA_ARCH_LIST takes it verbatim: every entry spelled as torch
// reads it ("9.0", "12.0a", "8.6+PTX"; not nvcc's "sm_90" or "compute_90"), none twice.
Status CheckTorchSpelling(std::string_view list) {
  std::set<std::string> seen;
  for (std::string_view written : arch::ArchListEntries(list)) {
    std::string entry(written);
    if (!std::isdigit(static_cast<unsigned char>(entry[0]))) {
      auto t = arch::ParseArchList(entry);
      std::string torch = t.ok() && t->size() == 1 && t->front().sass
                              ? " (write \"" + t->front().ToString() + "\")"
                              : "";
      return Status::InvalidArgument("arch list entry \"" + entry +
                                     "\" is nvcc's spelling; TORCH_CUDA_ARCH_LIST, which the "
                                     "build gets verbatim, reads MAJOR.MINOR[a|f][+PTX]" +
                                     torch);
    }
    if (!seen.insert(entry).second) {
      return Status::InvalidArgument("arch list entry \"" + entry + "\" is given twice in \"" +
                                     std::string(list) + "\"");
    }
  }
  return Status::Ok();
}

}  // namespace

const std::vector<std::string_view>& AxisNames() {
  static const std::vector<std::string_view> kNames = {"python", "torch", "cuda", "arch_lists",
                                                       "platform"};
  return kNames;
}

std::string_view CanonicalAxis(std::string_view key) {
  if (key == "arch_list") return "arch_lists";
  for (std::string_view name : AxisNames()) {
    if (name == key) return name;
  }
  return "";
}

bool VersionLess(std::string_view a, std::string_view b) {
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      size_t ie = i, je = j;
      while (ie < a.size() && digit(a[ie])) ++ie;
      while (je < b.size() && digit(b[je])) ++je;
      std::string_view x = a.substr(i, ie - i), y = b.substr(j, je - j);
      while (x.size() > 1 && x.front() == '0') x.remove_prefix(1);
      while (y.size() > 1 && y.front() == '0') y.remove_prefix(1);
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = ie, j = je;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i, ++j;
  }
  return a.size() - i < b.size() - j;
}

std::string DescribeTorchFollow(const farm::v1::Recipe& recipe) {
  if (!recipe.matrix().has_torch_follow()) return "";
  const farm::v1::TorchFollow& follow = recipe.matrix().torch_follow();
  std::vector<std::string> minors(recipe.matrix().torch().begin(), recipe.matrix().torch().end());
  std::sort(minors.begin(), minors.end(),
            [](const std::string& a, const std::string& b) { return VersionLess(a, b); });
  std::string releases;
  for (const std::string& minor : minors) {
    auto pinned = recipe.environment().torch().find(minor);
    std::string release = pinned == recipe.environment().torch().end() ? minor : pinned->second;
    const auto& candidates = recipe.environment().torch_candidates();
    if (std::find(candidates.begin(), candidates.end(), minor) != candidates.end()) {
      release += " (release candidate)";
    }
    releases += (releases.empty() ? "" : ", ") + release;
  }
  return "torch \"" + (follow.spec().empty() ? std::string("any") : follow.spec()) +
         "\" resolved to " + (releases.empty() ? std::string("nothing") : releases);
}

Status CheckAxisValue(std::string_view axis, std::string_view value) {
  const std::string quoted = "\"" + std::string(value) + "\"";
  if (axis == "python" && !IsVersion(value, false)) {
    return Status::InvalidArgument("python version " + quoted +
                                   " must be MAJOR.MINOR such as \"3.11\"");
  }
  if (axis == "cuda" && !IsVersion(value, false)) {
    return Status::InvalidArgument("CUDA version " + quoted +
                                   " must be MAJOR.MINOR such as \"12.8\"");
  }
  if (axis == "torch" && !value.empty() && !IsVersion(value, true)) {
    return Status::InvalidArgument("torch version " + quoted +
                                   " must be MAJOR.MINOR[.PATCH] such as \"2.8\"");
  }
  if (axis == "arch_lists") {
    FARM_RETURN_IF_ERROR(arch::ParseArchList(value).status());
    return CheckTorchSpelling(value);
  }
  if (axis == "platform" && !IsPlatformTag(value)) {
    return Status::InvalidArgument("platform " + quoted +
                                   " must be a wheel platform tag such as \"linux_x86_64\"");
  }
  if (CanonicalAxis(axis).empty()) {
    return Status::InvalidArgument("unknown axis \"" + std::string(axis) + "\"");
  }
  return Status::Ok();
}

std::string DescribeCell(const farm::v1::MatrixCell& cell) {
  const Cell c = {cell.python(), cell.torch(), cell.cuda(), cell.arch_list(), cell.platform()};
  std::string out;
  for (size_t axis = 0; axis < kAxes; ++axis) {
    if (!c[axis].empty()) out += (out.empty() ? "" : " ") + AxisValue(axis, c[axis]);
  }
  return out.empty() ? "(empty cell)" : out;
}

MatrixExpansion ExpandMatrix(const farm::v1::MatrixAxes& requested,
                             const farm::v1::MatrixAxes& supported, const CellAdjuster& adjust) {
  MatrixExpansion out;
  std::array<Values, kAxes> axes;
  for (size_t axis = 0; axis < kAxes; ++axis) {
    axes[axis] = EffectiveAxis(axis, requested, supported, &out.rejected);
    // Every requested value was refused: building with the axis left out would be wrong.
    if (!AxisValues(requested, axis).empty() && axes[axis].empty()) return out;
  }
  Result<Rules> rules = CollectRules(requested, supported);
  if (!rules.ok()) return Fail(std::move(out), rules.status());
  if (ProductSize(axes) > kMaxMatrixCells) return Fail(std::move(out), TooLarge());
  std::vector<Cell> cells;
  for (Cell& c : Product(axes)) {
    bool excluded = std::any_of(rules->exclude.begin(), rules->exclude.end(),
                                [&](const Rule& r) { return Matches(r, c); });
    if (!excluded) cells.push_back(std::move(c));
  }
  ApplyIncludes(rules->include, axes, requested, supported, &cells, &out.rejected);
  if (Status split = SplitFamilies(supported.families(), &cells, &out.rejected); !split.ok()) {
    return Fail(std::move(out), split);
  }
  std::set<Cell> seen;
  for (const Cell& c : cells) {
    farm::v1::MatrixCell cell = ToProto(c);
    const std::string changed = adjust ? adjust(&cell) : "";
    if (!seen.insert(FromProto(cell)).second) continue;
    std::string problem = CheckCell(cell, supported);
    if (problem.empty()) {
      out.cells.push_back(std::move(cell));
    } else {
      out.rejected.push_back(DescribeCell(ToProto(c)) +
                             (changed.empty() ? "" : " (" + changed + ")") + ": " + problem);
    }
  }
  if (out.cells.size() > kMaxMatrixCells) return Fail(std::move(out), TooLarge());
  return out;
}

std::string CheckCell(const farm::v1::MatrixCell& cell, const farm::v1::MatrixAxes& supported) {
  return CellProblem(FromProto(cell), supported);
}

bool HasAxes(const farm::v1::MatrixAxes& m) {
  return m.python_size() || m.torch_size() || m.cuda_size() || m.arch_lists_size() ||
         m.platform_size() || m.include_size();
}

MatrixExpansion ExpandRequest(const farm::v1::MatrixAxes& requested,
                              const farm::v1::MatrixAxes& recipe, const CellAdjuster& adjust) {
  return ExpandMatrix(HasAxes(requested) ? requested : recipe, recipe, adjust);
}

Status CheckBuildable(const MatrixExpansion& expansion) {
  if (!expansion.cells.empty()) return Status::Ok();
  std::string rejected;
  for (const auto& r : expansion.rejected) rejected += r + "\n";
  return Status::InvalidArgument("the matrix has no buildable cell:\n" + rejected);
}

}  // namespace farm::recipe
