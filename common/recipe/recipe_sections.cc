// The optional blocks of a recipe: matrix, validation, retry, publish.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "common/recipe/matrix.h"
#include "common/recipe/recipe.h"
#include "common/recipe/recipe_internal.h"
#include "common/recipe/yaml_reader.h"
#include "common/upstream/release_version.h"

namespace farm::recipe {
namespace {

constexpr int64_t kMaxAttempts = 10;
constexpr int64_t kMaxBackoffSeconds = 3600;
constexpr double kMaxMinSpeedup = 1000;

google::protobuf::RepeatedPtrField<std::string>* AxisField(farm::v1::MatrixAxes* m,
                                                           std::string_view axis) {
  if (axis == "python") return m->mutable_python();
  if (axis == "torch") return m->mutable_torch();
  if (axis == "cuda") return m->mutable_cuda();
  if (axis == "arch_lists") return m->mutable_arch_lists();
  return m->mutable_platform();
}

Status ParseAxis(const Section& matrix, std::string_view axis, farm::v1::MatrixAxes* out) {
  std::vector<Item> values;
  FARM_RETURN_IF_ERROR(matrix.GetStringList(axis, &values));
  for (size_t i = 0; i < values.size(); ++i) {
    std::string where = "matrix." + std::string(axis) + "[" + std::to_string(i) + "]: ";
    Status valid = CheckAxisValue(axis, values[i].text);
    if (!valid.ok()) return matrix.sink().At(values[i].pos, where + valid.message());
    for (size_t j = 0; j < i; ++j) {
      if (values[j].text == values[i].text) {
        return matrix.sink().At(values[i].pos,
                                where + "duplicate value \"" + values[i].text + "\"");
      }
    }
    AxisField(out, axis)->Add(std::string(values[i].text));
  }
  return Status::Ok();
}

Status ParseRule(const ErrorSink& sink, const Field& element, farm::v1::MatrixRule* rule) {
  if (!element.value.IsMap()) {
    return sink.At(element.value_pos(), "\"" + element.name +
                                            "\" must be a mapping of axis to value, got " +
                                            Describe(element.value));
  }
  FARM_ASSIGN_OR_RETURN(auto pairs, ReadStringMap(sink, element));
  if (pairs.empty()) {
    return sink.At(element.value_pos(), "\"" + element.name + "\" must name at least one axis");
  }
  for (const auto& [key, value] : pairs) {
    std::string_view axis = CanonicalAxis(key.text);
    if (axis.empty()) {
      return sink.At(key.pos, "unknown axis \"" + key.text + "\" in " + element.name +
                                  " (expected one of: python, torch, cuda, arch_lists, platform)");
    }
    if (rule->match().contains(std::string(axis))) {
      return sink.At(key.pos,
                     "axis \"" + std::string(axis) + "\" is named twice in " + element.name);
    }
    Status valid = CheckAxisValue(axis, value.text);
    if (!valid.ok())
      return sink.At(value.pos, element.name + "." + key.text + ": " + valid.message());
    (*rule->mutable_match())[std::string(axis)] = value.text;
  }
  return Status::Ok();
}

Status ParseRules(const Section& matrix, std::string_view key,
                  google::protobuf::RepeatedPtrField<farm::v1::MatrixRule>* rules) {
  const Field* f = matrix.Find(key);
  if (f == nullptr || f->value.IsNull()) return Status::Ok();
  if (!f->value.IsSequence()) {
    return matrix.sink().At(f->value_pos(),
                            "\"" + f->name + "\" must be a list, got " + Describe(f->value));
  }
  size_t index = 0;
  for (const YAML::Node& node : f->value) {
    std::string name = f->name + "[" + std::to_string(index++) + "]";
    Field element{name, name, node, ToPosition(node.Mark())};
    FARM_RETURN_IF_ERROR(ParseRule(matrix.sink(), element, rules->Add()));
  }
  return Status::Ok();
}

bool IsModuleName(std::string_view name) {
  if (name.empty() || name.front() == '.' || name.back() == '.') return false;
  char prev = '.';
  for (char c : name) {
    bool ident = std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    if (!ident && c != '.') return false;
    if (prev == '.' && (c == '.' || std::isdigit(static_cast<unsigned char>(c)))) return false;
    prev = c;
  }
  return true;
}

bool IsRepoName(std::string_view repo) {
  size_t slash = repo.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == repo.size()) return false;
  if (repo.find('/', slash + 1) != std::string_view::npos) return false;
  return std::all_of(repo.begin(), repo.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
           c == '/';
  });
}

Status CheckRepo(const Section& s, std::string_view key, const std::string& repo) {
  if (repo.empty() || IsRepoName(repo)) return Status::Ok();
  return s.sink().At(s.Find(key)->value_pos(), "\"" + s.prefix() + std::string(key) +
                                                   "\" must be owner/name, got \"" + repo + "\"");
}

// `torch: ">=2.8"` or `torch: {spec: ">=2.8", newest: 3, prereleases: false}`: the axis
// follows the per-CUDA indexes (farmd resolves it at submit). A list is a fixed axis.
Result<bool> ParseTorchFollow(const Section& matrix, farm::v1::MatrixAxes* out) {
  const Field* f = matrix.Find("torch");
  if (f == nullptr || f->value.IsNull() || f->value.IsSequence()) return false;
  farm::v1::TorchFollow* follow = out->mutable_torch_follow();
  Position spec_pos = f->value_pos();
  if (f->value.IsMap()) {
    FARM_ASSIGN_OR_RETURN(Section s,
                          Section::Read(matrix.sink(), f->value, f->key_pos, "matrix.torch",
                                        "matrix.torch.", {"spec", "newest", "prereleases"}));
    FARM_RETURN_IF_ERROR(s.GetString("spec", follow->mutable_spec()));
    int64_t newest = 0;
    FARM_RETURN_IF_ERROR(s.GetInt("newest", 0, 50, &newest));
    follow->set_newest(static_cast<int32_t>(newest));
    bool pre = false;
    FARM_RETURN_IF_ERROR(s.GetBool("prereleases", &pre));
    follow->set_prereleases(pre);
    if (const Field* spec = s.Find("spec")) spec_pos = spec->value_pos();
    if (follow->spec().empty() && follow->newest() == 0) {
      return matrix.sink().At(f->value_pos(),
                              "matrix.torch follows the index with a spec (\">=2.8\"), newest: N, "
                              "or both");
    }
  } else {
    FARM_ASSIGN_OR_RETURN(*follow->mutable_spec(), ReadString(matrix.sink(), *f));
  }
  auto spec = upstream::VersionSpec::Parse(follow->spec());
  if (!spec.ok()) return matrix.sink().At(spec_pos, "matrix.torch: " + spec.status().message());
  return true;
}

// `torch_cuda: {"2.8": ["13.0"]}`: torch/CUDA pairs a private torch build adds to the
// farm's table (arch::TorchReleases).
Status ParseTorchCuda(const Section& matrix, farm::v1::MatrixAxes* out) {
  const Field* f = matrix.Find("torch_cuda");
  if (f == nullptr || f->value.IsNull()) return Status::Ok();
  if (!f->value.IsMap()) {
    return matrix.sink().At(f->value_pos(),
                            "matrix.torch_cuda must map torch minors (\"2.8\") to the CUDA "
                            "versions a private torch build ships for ([\"13.0\"])");
  }
  for (auto it = f->value.begin(); it != f->value.end(); ++it) {
    Position pos = ToPosition(it->first.Mark());
    const std::string key = it->first.IsScalar() ? it->first.Scalar() : "";
    const std::string where = "matrix.torch_cuda." + key;
    Status torch = CheckAxisValue("torch", key);
    if (key.empty() || !torch.ok() || std::count(key.begin(), key.end(), '.') != 1) {
      return matrix.sink().At(pos,
                              "matrix.torch_cuda keys are torch minors such as \"2.8\", "
                              "got \"" +
                                  key.substr(0, 60) + "\"");
    }
    if (out->torch_cuda().contains(key)) {
      return matrix.sink().At(pos, "matrix.torch_cuda lists " + key + " twice");
    }
    FARM_ASSIGN_OR_RETURN(std::vector<Item> cudas,
                          ReadStringList(matrix.sink(), Field{key, where, it->second, pos}));
    farm::v1::CudaVersions& list = (*out->mutable_torch_cuda())[key];
    for (size_t i = 0; i < cudas.size(); ++i) {
      Status valid = CheckAxisValue("cuda", cudas[i].text);
      if (!valid.ok()) {
        return matrix.sink().At(cudas[i].pos,
                                where + "[" + std::to_string(i) + "]: " + valid.message());
      }
      list.add_cuda(cudas[i].text);
    }
  }
  return Status::Ok();
}

}  // namespace

Status ParseMatrixSection(const Section& top, farm::v1::MatrixAxes* matrix) {
  const Field* f = top.Find("matrix");
  if (f == nullptr) return Status::Ok();
  std::vector<std::string_view> keys = AxisNames();
  keys.push_back("include");
  keys.push_back("exclude");
  keys.push_back("torch_cuda");
  keys.push_back("families");
  FARM_ASSIGN_OR_RETURN(Section s,
                        Section::Read(top.sink(), f->value, f->key_pos, "matrix", "matrix.", keys));
  FARM_ASSIGN_OR_RETURN(bool following, ParseTorchFollow(s, matrix));
  for (std::string_view axis : AxisNames()) {
    if (following && axis == "torch") continue;
    FARM_RETURN_IF_ERROR(ParseAxis(s, axis, matrix));
  }
  FARM_RETURN_IF_ERROR(ParseRules(s, "include", matrix->mutable_include()));
  FARM_RETURN_IF_ERROR(ParseRules(s, "exclude", matrix->mutable_exclude()));
  FARM_RETURN_IF_ERROR(ParseTorchCuda(s, matrix));
  return ParseFamiliesField(s, matrix);
}

Status ParseValidationSection(const Section& top, farm::v1::Recipe* recipe) {
  const Field* f = top.Find("validation");
  if (f == nullptr) return Status::Ok();
  FARM_ASSIGN_OR_RETURN(
      Section s,
      Section::Read(top.sink(), f->value, f->key_pos, "validation", "validation.",
                    {"script", "import", "min_cosine", "max_relative_l1", "runtime_requirements",
                     "min_speedup", "gpu_memory_gb", "require_fast_path"}));
  farm::v1::ValidationSpec* v = recipe->mutable_validation();
  FARM_RETURN_IF_ERROR(s.GetString("script", v->mutable_script()));
  std::vector<Item> modules;
  FARM_RETURN_IF_ERROR(s.GetStringList("import", &modules));
  for (size_t i = 0; i < modules.size(); ++i) {
    if (!IsModuleName(modules[i].text)) {
      return s.sink().At(modules[i].pos, "\"validation.import[" + std::to_string(i) +
                                             "]\" must be a Python module name, got \"" +
                                             modules[i].text + "\"");
    }
    v->add_import_modules(modules[i].text);
  }
  double min_cosine = kDefaultMinCosine;
  FARM_RETURN_IF_ERROR(s.GetNumber("min_cosine", 0, 1, &min_cosine));
  v->set_min_cosine(min_cosine);
  double max_l1 = kDefaultMaxRelativeL1;
  FARM_RETURN_IF_ERROR(s.GetNumber("max_relative_l1", 0, 1, &max_l1));
  v->set_max_relative_l1(max_l1);
  double min_speedup = 0;
  FARM_RETURN_IF_ERROR(s.GetNumber("min_speedup", 0, kMaxMinSpeedup, &min_speedup));
  v->set_min_speedup(min_speedup);
  std::vector<Item> requirements;
  FARM_RETURN_IF_ERROR(s.GetStringList("runtime_requirements", &requirements));
  for (const Item& r : requirements) v->add_runtime_requirements(r.text);
  double gpu_gb = v->script().empty() ? 0 : kDefaultValidationGpuGb;
  FARM_RETURN_IF_ERROR(s.GetNumber("gpu_memory_gb", 0.1, kMaxGpuMemoryGb, &gpu_gb));
  v->set_gpu_memory_gb(gpu_gb);
  bool fast = false;
  FARM_RETURN_IF_ERROR(s.GetBool("require_fast_path", &fast));
  if (fast && v->script().empty()) {
    return s.sink().At(s.Find("require_fast_path")->value_pos(),
                       "\"validation.require_fast_path\" needs a validation script: the "
                       "script reports which implementation each case ran");
  }
  v->set_require_fast_path(fast);
  return Status::Ok();
}

Status ParseRetrySection(const Section& top, farm::v1::Recipe* recipe) {
  const Field* f = top.Find("retry");
  YAML::Node node = f ? f->value : YAML::Node();
  Position where = f ? f->key_pos : Position{};
  FARM_ASSIGN_OR_RETURN(Section s,
                        Section::Read(top.sink(), node, where, "retry", "retry.",
                                      {"max_attempts", "backoff_seconds", "retry_build_failures"}));
  int64_t attempts = kDefaultMaxAttempts;
  FARM_RETURN_IF_ERROR(s.GetInt("max_attempts", 1, kMaxAttempts, &attempts));
  int64_t backoff = kDefaultBackoffSeconds;
  FARM_RETURN_IF_ERROR(s.GetInt("backoff_seconds", 0, kMaxBackoffSeconds, &backoff));
  bool build_failures = false;
  FARM_RETURN_IF_ERROR(s.GetBool("retry_build_failures", &build_failures));
  farm::v1::RetryPolicy* retry = recipe->mutable_retry();
  retry->set_max_attempts(static_cast<int32_t>(attempts));
  retry->set_backoff_seconds(static_cast<int32_t>(backoff));
  retry->set_retry_build_failures(build_failures);
  return Status::Ok();
}

Status ParsePublishSection(const Section& top, farm::v1::Recipe* recipe) {
  const Field* f = top.Find("publish");
  if (f == nullptr) return Status::Ok();
  FARM_ASSIGN_OR_RETURN(
      Section s, Section::Read(top.sink(), f->value, f->key_pos, "publish", "publish.",
                               {"github_repo", "github_tag_template", "hf_repo", "hf_path_template",
                                "replace_assets", "local_version"}));
  farm::v1::PublishSpec* p = recipe->mutable_publish();
  FARM_RETURN_IF_ERROR(s.GetString("github_repo", p->mutable_github_repo()));
  FARM_RETURN_IF_ERROR(CheckRepo(s, "github_repo", p->github_repo()));
  FARM_RETURN_IF_ERROR(s.GetString("github_tag_template", p->mutable_github_tag_template()));
  FARM_RETURN_IF_ERROR(s.GetString("hf_repo", p->mutable_hf_repo()));
  FARM_RETURN_IF_ERROR(CheckRepo(s, "hf_repo", p->hf_repo()));
  FARM_RETURN_IF_ERROR(s.GetString("hf_path_template", p->mutable_hf_path_template()));
  bool replace = false;
  FARM_RETURN_IF_ERROR(s.GetBool("replace_assets", &replace));
  p->set_replace_assets(replace);
  FARM_RETURN_IF_ERROR(s.GetString("local_version", p->mutable_local_version_template()));
  return Status::Ok();
}

}  // namespace farm::recipe
