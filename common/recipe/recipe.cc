#include "common/recipe/recipe.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "common/git_policy.h"
#include "common/recipe/recipe_internal.h"
#include "common/recipe/yaml_reader.h"
#include "common/strings.h"

namespace farm::recipe {
namespace {

const std::vector<std::string_view> kTopLevelKeys = {"name",
                                                     "version",
                                                     "source",
                                                     "subdirectory",
                                                     "patches",
                                                     "env",
                                                     "build",
                                                     "system_site_packages",
                                                     "timeout",
                                                     "gb_per_compile_job",
                                                     "ccache",
                                                     "container_image",
                                                     "matrix",
                                                     "validation",
                                                     "retry",
                                                     "publish",
                                                     "network",
                                                     "unrequested_archs",
                                                     "build_on_target_gpu",
                                                     "requires",
                                                     "torch_abi",
                                                     "environment",
                                                     "cells",
                                                     "size_budget",
                                                     "fatbin_compression"};

constexpr size_t kMaxNameLength = 100;
constexpr double kMaxGbPerCompileJob = 1024;
constexpr double kMinGbPerCompileJob = 0.1;

// Variables the worker always sets (docs/recipes.md): a recipe value would be silently
// replaced, so it is refused. PATH (the worker prepends to it) and MAX_JOBS (the worker
// keeps a recipe's value) stay settable.
const std::vector<std::string_view> kWorkerEnv = {"VIRTUAL_ENV", "CUDA_HOME"};

bool IsNameChar(char c) {
  return std::islower(static_cast<unsigned char>(c)) ||
         std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
}

bool IsValidName(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  if (name[0] == '.' || name[0] == '_' || name[0] == '-') return false;
  return std::all_of(name.begin(), name.end(), IsNameChar);
}

bool IsEnvName(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

bool IsHex40(std::string_view s) {
  return s.size() == 40 && std::all_of(s.begin(), s.end(), [](char c) {
           return std::isxdigit(static_cast<unsigned char>(c));
         });
}

bool HasSpaceOrControl(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    return std::isspace(static_cast<unsigned char>(c)) ||
           std::iscntrl(static_cast<unsigned char>(c));
  });
}

// True for "", "/abs", and any path with a ".." component.
bool EscapesTree(std::string_view path) {
  if (path.empty() || path.front() == '/') return true;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (path.substr(start, end - start) == "..") return true;
    start = end + 1;
  }
  return false;
}

bool IsTarball(std::string_view path) {
  for (std::string_view ext : {".tar", ".tar.gz", ".tgz", ".tar.xz", ".tar.zst"}) {
    if (path.size() > ext.size() && path.ends_with(ext)) return true;
  }
  return false;
}

Status ParseName(const Section& top, farm::v1::Recipe* recipe) {
  FARM_ASSIGN_OR_RETURN(const Field* f, top.Require("name"));
  FARM_ASSIGN_OR_RETURN(std::string name, ReadString(top.sink(), *f));
  if (!IsValidName(name)) {
    return top.sink().At(f->value_pos(), "name \"" + name +
                                             "\" must match [a-z0-9][a-z0-9._-]* (at most " +
                                             std::to_string(kMaxNameLength) + " characters)");
  }
  recipe->set_name(name);
  return Status::Ok();
}

Status ParseGitSource(const ErrorSink& sink, const Field& f, farm::v1::GitSource* git) {
  FARM_ASSIGN_OR_RETURN(Section s, Section::Read(sink, f.value, f.key_pos, "source.git",
                                                 "source.git.", {"url", "commit", "ref"}));
  if (!f.value.IsMap())
    return sink.At(f.value_pos(), "source.git must be a mapping, got " + Describe(f.value));
  FARM_ASSIGN_OR_RETURN(const Field* url, s.Require("url"));
  FARM_ASSIGN_OR_RETURN(std::string url_text, ReadString(sink, *url));
  if (url_text.empty() || url_text.front() == '-' || HasSpaceOrControl(url_text)) {
    return sink.At(url->value_pos(),
                   "\"source.git.url\" must be a repository URL without "
                   "spaces that does not start with '-', got \"" +
                       url_text + "\"");
  }
  // Remote repositories only (ssh is checked against the farm's own setting at submit).
  git::GitPolicy remote;
  remote.allow_ssh = true;
  if (Status allowed = git::CheckGitUrl(url_text, remote); !allowed.ok()) {
    return sink.At(url->value_pos(), "\"source.git.url\": " + allowed.message());
  }
  git->set_url(url_text);
  FARM_RETURN_IF_ERROR(s.GetString("commit", git->mutable_commit()));
  FARM_RETURN_IF_ERROR(s.GetString("ref", git->mutable_ref()));
  if (!git->commit().empty() && !IsHex40(git->commit())) {
    return sink.At(s.Find("commit")->value_pos(),
                   "\"source.git.commit\" must be a full 40-hex-digit commit id, got \"" +
                       git->commit() + "\"");
  }
  git->set_commit(AsciiLower(git->commit()));
  if (!git->ref().empty() && (git->ref().front() == '-' || HasSpaceOrControl(git->ref()))) {
    return sink.At(s.Find("ref")->value_pos(),
                   "\"source.git.ref\" must be a branch or tag name, got \"" + git->ref() + "\"");
  }
  if (git->commit().empty() && git->ref().empty()) {
    return sink.At(f.key_pos, "source.git needs \"commit\" or \"ref\"");
  }
  return Status::Ok();
}

Status ParsePathSource(const ErrorSink& sink, const Field& f, farm::v1::Source* source) {
  FARM_ASSIGN_OR_RETURN(std::string path, ReadString(sink, f));
  if (path.empty()) return sink.At(f.value_pos(), "\"" + f.name + "\" must not be empty");
  if (f.key == "tarball") {
    if (!IsTarball(path)) {
      return sink.At(f.value_pos(),
                     "\"source.tarball\" must end in .tar, .tar.gz, .tgz, "
                     ".tar.xz or .tar.zst, got \"" +
                         path + "\"");
    }
    source->set_tarball_path(path);
  } else {
    source->set_local_path(path);
  }
  return Status::Ok();
}

Status ParseSource(const Section& top, ParsedRecipe* out) {
  const ErrorSink& sink = top.sink();
  FARM_ASSIGN_OR_RETURN(const Field* f, top.Require("source"));
  FARM_ASSIGN_OR_RETURN(Section s, Section::Read(sink, f->value, f->key_pos, "source", "source.",
                                                 {"local", "tarball", "git"}));
  if (s.fields().empty()) {
    return sink.At(f->key_pos, "source must set exactly one of: local, tarball, git");
  }
  if (s.fields().size() > 1) {
    const Field& second = s.fields()[1];
    return sink.At(second.key_pos, "source sets both \"" + s.fields()[0].key + "\" and \"" +
                                       second.key + "\"; set exactly one of: local, tarball, git");
  }
  const Field& kind = s.fields()[0];
  out->source_pos = kind.value_pos();
  farm::v1::Source* source = out->recipe.mutable_source();
  if (kind.key == "git") return ParseGitSource(sink, kind, source->mutable_git());
  return ParsePathSource(sink, kind, source);
}

Status ParsePatches(const Section& top, ParsedRecipe* out) {
  std::vector<Item> patches;
  FARM_RETURN_IF_ERROR(top.GetStringList("patches", &patches));
  for (size_t i = 0; i < patches.size(); ++i) {
    const Item& p = patches[i];
    std::string name = "patches[" + std::to_string(i) + "]";
    if (p.text.empty()) return top.sink().At(p.pos, "\"" + name + "\" must not be empty");
    for (size_t j = 0; j < i; ++j) {
      if (patches[j].text == p.text) {
        return top.sink().At(p.pos, "\"" + name + "\": patch \"" + p.text +
                                        "\" is listed twice (first at line " +
                                        std::to_string(patches[j].pos.line) + ")");
      }
    }
    out->recipe.add_patches()->set_name(p.text);
    out->patch_pos.push_back(p.pos);
  }
  return Status::Ok();
}

Status ParseEnv(const Section& top, farm::v1::Recipe* recipe) {
  const Field* f = top.Find("env");
  if (f == nullptr) return Status::Ok();
  return ParseEnvMap(top.sink(), *f, recipe->mutable_env());
}

Status ParseBuild(const Section& top, farm::v1::Recipe* recipe) {
  FARM_ASSIGN_OR_RETURN(const Field* f, top.Require("build"));
  FARM_ASSIGN_OR_RETURN(std::string build, ReadString(top.sink(), *f));
  if (std::all_of(build.begin(), build.end(), [](unsigned char c) { return std::isspace(c); })) {
    return top.sink().At(f->value_pos(), "\"build\" must not be empty");
  }
  recipe->set_build_command(build);
  return Status::Ok();
}

Status ParseSubdirectory(const Section& top, farm::v1::Recipe* recipe) {
  FARM_RETURN_IF_ERROR(top.GetString("subdirectory", recipe->mutable_subdirectory()));
  const std::string& sub = recipe->subdirectory();
  if (!sub.empty() && EscapesTree(sub)) {
    return top.sink().At(top.Find("subdirectory")->value_pos(),
                         "\"subdirectory\" must be a relative path inside the source tree, "
                         "got \"" +
                             sub + "\"");
  }
  return Status::Ok();
}

// `unrequested_archs: warn` (the default) keeps a wheel that holds images its arch list
// did not ask for, with a warning; `fail` fails the job.
Status ParseUnrequestedArchs(const Section& top, farm::v1::Recipe* recipe) {
  std::string policy = "warn";
  FARM_RETURN_IF_ERROR(top.GetString("unrequested_archs", &policy));
  if (policy != "warn" && policy != "fail") {
    return top.sink().At(top.Find("unrequested_archs")->value_pos(),
                         "\"unrequested_archs\" must be warn or fail, got \"" + policy + "\"");
  }
  recipe->set_refuse_unrequested_archs(policy == "fail");
  return Status::Ok();
}

Status ParseScalars(const Section& top, farm::v1::Recipe* recipe) {
  FARM_RETURN_IF_ERROR(top.GetString("version", recipe->mutable_version()));
  FARM_RETURN_IF_ERROR(top.GetString("container_image", recipe->mutable_container_image()));
  bool system_site = false;
  FARM_RETURN_IF_ERROR(top.GetBool("system_site_packages", &system_site));
  recipe->set_system_site_packages(system_site);
  int64_t timeout = kDefaultTimeoutSeconds;
  FARM_RETURN_IF_ERROR(top.GetInt("timeout", 1, kMaxTimeoutSeconds, &timeout));
  recipe->set_timeout_seconds(static_cast<int32_t>(timeout));
  double gb = kDefaultGbPerCompileJob;
  FARM_RETURN_IF_ERROR(
      top.GetNumber("gb_per_compile_job", kMinGbPerCompileJob, kMaxGbPerCompileJob, &gb));
  recipe->set_gb_per_compile_job(gb);
  bool ccache = true;
  FARM_RETURN_IF_ERROR(top.GetBool("ccache", &ccache));
  recipe->set_ccache(ccache);
  bool network = false;
  FARM_RETURN_IF_ERROR(top.GetBool("network", &network));
  recipe->set_network(network);
  bool on_gpu = false;
  FARM_RETURN_IF_ERROR(top.GetBool("build_on_target_gpu", &on_gpu));
  recipe->set_build_on_target_gpu(on_gpu);
  return ParseUnrequestedArchs(top, recipe);
}

Result<ParsedRecipe> ParseRoot(const ErrorSink& sink, const YAML::Node& root) {
  if (!root.IsDefined() || root.IsNull()) return sink.At({}, "the recipe is empty");
  if (!root.IsMap()) {
    return sink.At(ToPosition(root.Mark()), "a recipe must be a mapping, got " + Describe(root));
  }
  FARM_ASSIGN_OR_RETURN(Section top, Section::Read(sink, root, {}, "recipe", "", kTopLevelKeys));
  ParsedRecipe out;
  farm::v1::Recipe* recipe = &out.recipe;
  FARM_RETURN_IF_ERROR(ParseName(top, recipe));
  FARM_RETURN_IF_ERROR(ParseSource(top, &out));
  FARM_RETURN_IF_ERROR(ParseBuild(top, recipe));
  FARM_RETURN_IF_ERROR(ParseSubdirectory(top, recipe));
  FARM_RETURN_IF_ERROR(ParsePatches(top, &out));
  FARM_RETURN_IF_ERROR(ParseEnv(top, recipe));
  FARM_RETURN_IF_ERROR(ParseScalars(top, recipe));
  FARM_RETURN_IF_ERROR(ParseFitFields(top, recipe));
  FARM_RETURN_IF_ERROR(ParseMatrixSection(top, recipe->mutable_matrix()));
  FARM_RETURN_IF_ERROR(ParseValidationSection(top, recipe));
  FARM_RETURN_IF_ERROR(ParseRetrySection(top, recipe));
  FARM_RETURN_IF_ERROR(ParsePublishSection(top, recipe));
  FARM_RETURN_IF_ERROR(ParseRequiresSection(top, recipe));
  FARM_RETURN_IF_ERROR(ParseTorchAbiSection(top, recipe));
  FARM_RETURN_IF_ERROR(ParseEnvironmentSection(top, recipe));
  FARM_RETURN_IF_ERROR(ParseCellsSection(top, recipe));
  if (recipe->matrix().has_torch_follow() && !recipe->has_environment()) {
    return sink.At(top.Find("matrix")->value_pos(),
                   "matrix.torch follows the index, so each cell's torch is provisioned: add an "
                   "environment: block (docs/environments.md)");
  }
  if (recipe->matrix().has_torch_follow() && recipe->matrix().cuda().empty()) {
    return sink.At(top.Find("matrix")->value_pos(),
                   "matrix.torch follows the index of each CUDA: list matrix.cuda");
  }
  return out;
}

// Notes where each document the parser is asked for starts, and ignores everything else.
class DocumentStarts final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

  std::vector<YAML::Mark> starts;
};

// Loads the one document of `yaml`; a second one ("---") is reported rather than ignored.
// Documents are counted with a loop bounded at two instead of YAML::LoadAll: yaml-cpp 0.7's
// parser answers a stray ',' at the top level (",\n", found by tests/fuzz/recipe_fuzz) with
// an empty document at the same place forever, and LoadAll allocates until memory runs out.
// The text is parsed twice (events, then the node); the node builder LoadAll uses is not
// public, and a recipe is at most 1 MiB.
Result<YAML::Node> LoadSingleDocument(const ErrorSink& sink, std::string_view yaml) {
  try {
    std::istringstream stream{std::string(yaml)};
    YAML::Parser parser(stream);
    DocumentStarts documents;
    while (documents.starts.size() < 2 && parser.HandleNextDocument(documents)) {
    }
    if (documents.starts.size() == 2) {
      const YAML::Mark& second = documents.starts[1];
      if (second.pos == documents.starts[0].pos) {
        return sink.At(ToPosition(second), "YAML syntax error: no document can start here");
      }
      return sink.At(ToPosition(second), "a recipe is one YAML document; a second one starts here");
    }
    return documents.starts.empty() ? YAML::Node() : YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    SyntaxError error = ExplainSyntaxError(yaml, e.mark, e.msg);
    return sink.At(error.pos, error.message);
  }
}

}  // namespace

Status ParseEnvMap(const ErrorSink& sink, const Field& f,
                   google::protobuf::Map<std::string, std::string>* out) {
  FARM_ASSIGN_OR_RETURN(auto pairs, ReadStringMap(sink, f));
  for (const auto& [key, value] : pairs) {
    if (!IsEnvName(key.text)) {
      return sink.At(key.pos, "env name \"" + key.text + "\" must match [A-Za-z_][A-Za-z0-9_]*");
    }
    if (key.text == "TORCH_CUDA_ARCH_LIST") {
      return sink.At(key.pos,
                     "env \"TORCH_CUDA_ARCH_LIST\" cannot be set here; list it "
                     "under matrix.arch_lists so it is checked against CUDA "
                     "and GPUs");
    }
    bool reserved = key.text.starts_with("FARM_") ||
                    std::find(kWorkerEnv.begin(), kWorkerEnv.end(), key.text) != kWorkerEnv.end();
    if (reserved) {
      return sink.At(key.pos, "env \"" + key.text +
                                  "\" is set by the worker for every build and cannot "
                                  "be overridden");
    }
    (*out)[key.text] = value.text;
  }
  return Status::Ok();
}

bool IsRecipeName(std::string_view name) { return IsValidName(name); }

Result<ParsedRecipe> ParseRecipeWithPositions(std::string_view yaml, std::string_view filename) {
  ErrorSink sink{std::string(filename)};
  if (yaml.size() > kMaxRecipeBytes) {
    return sink.At({}, "the recipe is " + std::to_string(yaml.size()) + " bytes; at most " +
                           std::to_string(kMaxRecipeBytes) + " are accepted");
  }
  FARM_ASSIGN_OR_RETURN(YAML::Node root, LoadSingleDocument(sink, yaml));
  try {
    FARM_ASSIGN_OR_RETURN(ParsedRecipe parsed, ParseRoot(sink, root));
    parsed.recipe.set_yaml(std::string(yaml));
    return parsed;
  } catch (const std::exception& e) {
    // yaml-cpp accessors throw on malformed trees; never let that cross this boundary.
    return sink.At({}, std::string("invalid recipe: ") + e.what());
  }
}

Result<farm::v1::Recipe> ParseRecipe(std::string_view yaml, std::string_view filename) {
  FARM_ASSIGN_OR_RETURN(ParsedRecipe parsed, ParseRecipeWithPositions(yaml, filename));
  return std::move(parsed.recipe);
}

}  // namespace farm::recipe
