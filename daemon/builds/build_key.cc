#include "daemon/builds/build_key.h"

#include <algorithm>
#include <map>

#include "common/sha256.h"

namespace farm::builds {
namespace {

// Writes `s` into `h` after its length, so that fields cannot run into each other.
void Field(Sha256& h, const std::string& s) {
  h.Update(std::to_string(s.size()));
  h.Update(":");
  h.Update(s);
}

}  // namespace

std::string SourceIdentity(const farm::v1::Source& src, const std::string& digest) {
  if (src.has_git()) {
    return src.git().commit().empty() ? "" : "git:" + src.git().url() + "@" + src.git().commit();
  }
  // An uploaded archive is its bytes, as farmd checked them on upload.
  if (src.has_archive()) return "archive:" + src.archive().sha256();
  // A client path (refused at submit) is identified by its content digest, never its path.
  return digest.empty() ? "" : "content:" + digest;
}

std::string BuildKey(const BuildKeyInputs& in) {
  if (in.source.empty()) return "";
  Sha256 h;
  Field(h, in.recipe.yaml());
  for (const auto& p : in.recipe.patches()) Field(h, p.content());
  Field(h, in.source);
  const farm::v1::MatrixCell& cell = in.cell;
  for (const auto* v :
       {&cell.python(), &cell.torch(), &cell.cuda(), &cell.arch_list(), &cell.platform()}) {
    Field(h, *v);
  }
  // A followed torch axis pins its releases at submit, outside the recipe's text: a new
  // patch release of the same minor is a new input.
  if (in.recipe.matrix().has_torch_follow()) {
    auto pin = in.recipe.environment().torch().find(cell.torch());
    Field(h, pin == in.recipe.environment().torch().end() ? "" : pin->second);
  }
  for (const farm::v1::MatrixCell& c : in.validate_in) {
    Field(h, "validate:" + c.python() + "/" + c.torch() + "/" + c.cuda());
  }
  if (in.lock_digest != nullptr && !in.lock_digest->empty()) Field(h, "lock:" + *in.lock_digest);
  if (in.validate_locks != nullptr) {
    std::map<std::string, std::string> sorted(in.validate_locks->begin(), in.validate_locks->end());
    for (const auto& [cell, digest] : sorted) Field(h, "validate-lock:" + cell + "=" + digest);
  }
  return h.HexDigest();
}

std::string KeyWithInputs(const std::string& key_base, std::vector<std::string> wheel_sha256s) {
  if (key_base.empty()) return "";
  std::sort(wheel_sha256s.begin(), wheel_sha256s.end());
  Sha256 h;
  h.Update("requires:");
  h.Update(key_base);
  for (const std::string& sha : wheel_sha256s) {
    h.Update(":");
    h.Update(sha);
  }
  return h.HexDigest();
}

std::string ScheduleInputsDigest(const farm::v1::SubmitBuildRequest& req) {
  std::string source = SourceIdentity(req.source(), req.source_digest());
  if (source.empty()) return "";
  Sha256 h;
  Field(h, "schedule-inputs-v1");
  Field(h, req.recipe_yaml());
  for (const auto& p : req.patches()) {
    Field(h, p.name());
    Field(h, p.content());
  }
  Field(h, source);
  Field(h, req.matrix().SerializeAsString());  // repeated fields only: deterministic
  // A graph is unchanged only when every recipe it requires is.
  for (const auto& sub : req.requirements()) {
    std::string digest = ScheduleInputsDigest(sub);
    if (digest.empty()) return "";
    Field(h, digest);
  }
  return h.HexDigest();
}

}  // namespace farm::builds
