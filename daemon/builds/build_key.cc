#include "daemon/builds/build_key.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <map>
#include <set>

#include "common/sha256.h"

namespace farm::builds {
namespace {

// Writes `s` into `h` after its length, so that fields cannot run into each other.
void Field(Sha256& h, const std::string& s) {
  h.Update(std::to_string(s.size()));
  h.Update(":");
  h.Update(s);
}

// "2.8" of "2.8.1+cu128", "2.8" and "2.8.1": the torch minor a release or an axis value is of.
std::string TorchMinor(const std::string& version) {
  std::string v = version.substr(0, version.find('+'));
  size_t first = v.find('.');
  size_t second = first == std::string::npos ? first : v.find('.', first + 1);
  return v.substr(0, second);
}

// The recipe as the build of `cell` (validated in `validate_in`) reads it: what changes
// how that build runs or what it makes, and nothing else. Its text goes (comments and
// layout change no build; what the text says is the parsed fields), and so do the other
// cells of the matrix, where the wheels are published and how often a failure is retried.
// Of the per-torch environment, only the entries of the torches this job builds or
// validates with stay (their releases, pins and release-candidate marks).
farm::v1::Recipe CellRecipe(const farm::v1::Recipe& recipe, const farm::v1::MatrixCell& cell,
                            const google::protobuf::RepeatedPtrField<farm::v1::MatrixCell>& v) {
  farm::v1::Recipe out = recipe;
  out.clear_yaml();
  out.clear_matrix();
  out.clear_publish();
  out.clear_retry();
  std::set<std::string> torches{cell.torch()};
  for (const farm::v1::MatrixCell& c : v) torches.insert(c.torch());
  std::set<std::string> minors;
  for (const std::string& t : torches) minors.insert(TorchMinor(t));
  auto* torch = out.mutable_environment()->mutable_torch();
  for (auto it = torch->begin(); it != torch->end();) {
    it = torches.count(it->first) == 0 ? torch->erase(it) : std::next(it);
  }
  // Whether a torch is a release candidate, and from which index, is the job's only for
  // its own torches: a candidate of another minor changes nothing here.
  for (auto* list : {out.mutable_environment()->mutable_torch_candidates(),
                     out.mutable_environment()->mutable_torch_from_test()}) {
    std::vector<std::string> kept;
    for (const std::string& t : *list) {
      if (torches.count(t)) kept.push_back(t);
    }
    list->Clear();
    for (std::string& t : kept) *list->Add() = std::move(t);
  }
  auto* pins = out.mutable_environment()->mutable_torch_requirements();
  for (auto it = pins->begin(); it != pins->end();) {
    it = minors.count(TorchMinor(it->first)) == 0 ? pins->erase(it) : std::next(it);
  }
  return out;
}

// The message's bytes, the same for equal messages (map entries in key order).
std::string Deterministic(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  m.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
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
  Field(h, "build-key-v2");
  Field(h, Deterministic(CellRecipe(in.recipe, in.cell, in.validate_in)));
  Field(h, in.source);
  const farm::v1::MatrixCell& cell = in.cell;
  for (const auto* v :
       {&cell.python(), &cell.torch(), &cell.cuda(), &cell.arch_list(), &cell.platform()}) {
    Field(h, *v);
  }
  for (const farm::v1::MatrixCell& c : in.validate_in) {
    Field(h, "validate:" + c.python() + "/" + c.torch() + "/" + c.cuda());
  }
  if (in.lock_digest != nullptr && !in.lock_digest->empty()) Field(h, "lock:" + *in.lock_digest);
  if (in.validate_locks != nullptr) {
    std::map<std::string, std::string> sorted(in.validate_locks->begin(), in.validate_locks->end());
    for (const auto& [key, digest] : sorted) Field(h, "validate-lock:" + key + "=" + digest);
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
