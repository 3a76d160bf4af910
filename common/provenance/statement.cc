#include "common/provenance/statement.h"

#include <boost/json.hpp>
#include <cmath>

#include "common/clock.h"
#include "common/provenance/json_read.h"

namespace farm::provenance {

namespace json = boost::json;

namespace {

json::object Digest(const std::string& sha256, const std::string& git_commit = "") {
  json::object d;
  if (!sha256.empty()) d["sha256"] = sha256;
  if (!git_commit.empty()) d["gitCommit"] = git_commit;
  return d;
}

json::object SubjectJson(const Subject& s) {
  return json::object{{"name", s.name}, {"digest", Digest(s.sha256)}};
}

// A ResourceDescriptor with a `role` annotation saying why it is listed.
json::object ResourceJson(const Resource& r, const std::string& role) {
  json::object o{{"name", r.name}};
  if (!r.uri.empty()) o["uri"] = r.uri;
  json::object digest = Digest(r.sha256, r.git_commit);
  if (!digest.empty()) o["digest"] = std::move(digest);
  json::object annotations{{"role", role}};
  for (const auto& [k, v] : r.annotations) annotations[k] = v;
  o["annotations"] = std::move(annotations);
  return o;
}

json::object WorkerJson(const WorkerFacts& w) {
  json::array gpus;
  for (const auto& g : w.gpus) {
    gpus.push_back(json::object{
        {"name", g.name}, {"computeCapability", g.compute_capability}, {"uuid", g.uuid}});
  }
  json::array toolkits;
  for (const auto& t : w.toolkits) toolkits.push_back(json::value(t));
  return json::object{{"name", "worker " + w.name},
                      {"uri", "urn:gpu-wheel-farm:worker:" + w.id},
                      {"annotations", json::object{{"role", "worker"},
                                                   {"workerName", w.name},
                                                   {"hostname", w.hostname},
                                                   {"platform", w.platform},
                                                   {"driverVersion", w.driver_version},
                                                   {"driverCudaVersion", w.driver_cuda_version},
                                                   {"gpus", std::move(gpus)},
                                                   {"toolkits", std::move(toolkits)}}}};
}

// Finite numbers only: JSON has no NaN or infinity.
void PutNumber(json::object& o, const char* key, double v) {
  if (std::isfinite(v)) o[key] = v;
}

json::object CaseJson(const CaseFacts& c) {
  json::object o{{"name", c.name}, {"passed", c.passed}};
  PutNumber(o, "cosine", c.cosine);
  PutNumber(o, "relativeL1", c.relative_l1);
  PutNumber(o, "rmse", c.rmse);
  if (c.throughput != 0) {
    PutNumber(o, "throughput", c.throughput);
    o["throughputUnit"] = c.throughput_unit;
  }
  if (!c.baseline.empty()) {
    o["baseline"] = c.baseline;
    PutNumber(o, "baselineThroughput", c.baseline_throughput);
  }
  return o;
}

json::object StatementObject(const Subject& subject, const char* predicate_type,
                             json::object predicate) {
  return json::object{{"_type", kStatementType},
                      {"subject", json::array{SubjectJson(subject)}},
                      {"predicateType", predicate_type},
                      {"predicate", std::move(predicate)}};
}

json::object BuildDefinition(const BuildFacts& f) {
  Resource recipe{.name = "recipe " + f.recipe_name, .sha256 = f.recipe_sha256};
  json::array deps{ResourceJson(recipe, "recipe"), ResourceJson(f.source, "source")};
  for (const auto& p : f.patches) deps.push_back(ResourceJson(p, "patch"));
  for (const auto& w : f.consumed_wheels) deps.push_back(ResourceJson(w, "consumed-wheel"));
  for (const auto& e : f.environment) deps.push_back(ResourceJson(e, "environment"));
  json::object internal{{"build", f.build_id}, {"job", f.job_id}, {"attempt", f.attempt}};
  if (!f.validation_script_sha256.empty()) {
    internal["validationScript"] = Digest(f.validation_script_sha256);
  }
  return json::object{{"buildType", kBuildType},
                      {"externalParameters",
                       json::object{{"recipe", json::object{{"name", f.recipe_name},
                                                            {"version", f.recipe_version},
                                                            {"digest", Digest(f.recipe_sha256)}}},
                                    {"cell", json::object{{"python", f.cell.python},
                                                          {"torch", f.cell.torch},
                                                          {"cuda", f.cell.cuda},
                                                          {"archList", f.cell.arch_list},
                                                          {"platform", f.cell.platform}}},
                                    {"source", ResourceJson(f.source, "source")}}},
                      {"internalParameters", std::move(internal)},
                      {"resolvedDependencies", std::move(deps)}};
}

}  // namespace

std::string BuilderId(std::string_view farm_id) {
  return "urn:gpu-wheel-farm:farm:" + std::string(farm_id);
}

std::string BuildStatementJson(const BuildFacts& f) {
  json::object run{
      {"builder", json::object{{"id", BuilderId(f.farm_id)},
                               {"version", json::object{{"farmd", f.farmd_version}}},
                               {"builderDependencies", json::array{WorkerJson(f.worker)}}}},
      {"metadata", json::object{{"invocationId", "build " + std::to_string(f.build_id) + " job " +
                                                     std::to_string(f.job_id) + " attempt " +
                                                     std::to_string(f.attempt)},
                                {"startedOn", FormatRfc3339(f.started_ms)},
                                {"finishedOn", FormatRfc3339(f.finished_ms)}}},
      {"byproducts",
       json::array{json::object{{"name", "build log"},
                                {"digest", Digest(f.log_sha256)},
                                {"annotations", json::object{{"lines", f.log_lines}}}}}}};
  json::object predicate{{"buildDefinition", BuildDefinition(f)}, {"runDetails", std::move(run)}};
  return json::serialize(StatementObject(f.wheel, kSlsaPredicateType, std::move(predicate)));
}

std::string ValidationStatementJson(const ValidationFacts& f) {
  json::array cases;
  for (const auto& c : f.cases) cases.push_back(CaseJson(c));
  json::object predicate{
      {"verdict", f.verdict},
      {"gpu", json::object{{"name", f.gpu_name}, {"computeCapability", f.compute_capability}}},
      {"validatedWheel", SubjectJson(f.validated)},
      {"message", f.message},
      {"cases", std::move(cases)},
      {"validator",
       json::object{{"builderId", BuilderId(f.farm_id)}, {"worker", WorkerJson(f.worker)}}},
      {"run", json::object{{"job", f.job_id},
                           {"attempt", f.attempt},
                           {"finishedOn", FormatRfc3339(f.finished_ms)}}}};
  return json::serialize(StatementObject(f.wheel, kValidationPredicateType, std::move(predicate)));
}

namespace {

// "gpu-box-1 (host box1)" and its GPUs from a worker ResourceDescriptor.
void ReadWorker(const json::object& worker, std::string* who, std::string* gpus,
                std::string* driver, std::string* toolkits) {
  const json::object* a = ObjectAt(worker, {"annotations"});
  if (a == nullptr) return;
  *who = StringAt(*a, {"workerName"});
  std::string host = StringAt(*a, {"hostname"});
  if (!host.empty() && host != *who) *who += " (host " + host + ")";
  if (const json::array* list = ArrayAt(*a, "gpus")) {
    for (const json::value& g : *list) {
      if (!g.is_object()) continue;
      if (!gpus->empty()) *gpus += ", ";
      *gpus += StringAt(g.as_object(), {"name"}) + " (" +
               StringAt(g.as_object(), {"computeCapability"}) + ")";
    }
  }
  if (driver != nullptr) {
    *driver = StringAt(*a, {"driverVersion"});
    std::string cuda = StringAt(*a, {"driverCudaVersion"});
    if (!cuda.empty()) *driver += " (CUDA " + cuda + ")";
  }
  if (toolkits != nullptr) {
    if (const json::array* list = ArrayAt(*a, "toolkits")) {
      for (const json::value& t : *list) {
        if (!t.is_string()) continue;
        if (!toolkits->empty()) *toolkits += ", ";
        *toolkits += std::string(t.as_string());
      }
    }
  }
}

BuildSummary ReadBuild(const json::object& p) {
  BuildSummary s;
  s.builder_id = StringAt(p, {"runDetails", "builder", "id"});
  if (const json::object* b = ObjectAt(p, {"runDetails", "builder"})) {
    if (const json::array* deps = ArrayAt(*b, "builderDependencies");
        deps != nullptr && !deps->empty() && deps->front().is_object()) {
      ReadWorker(deps->front().as_object(), &s.worker, &s.worker_gpus, &s.driver, &s.toolkits);
    }
  }
  if (const json::object* ext = ObjectAt(p, {"buildDefinition", "externalParameters"})) {
    s.recipe = StringAt(*ext, {"recipe", "name"}) + " " + StringAt(*ext, {"recipe", "version"}) +
               " (recipe sha256 " + StringAt(*ext, {"recipe", "digest", "sha256"}) + ")";
    std::string commit = StringAt(*ext, {"source", "digest", "gitCommit"});
    s.source = commit.empty() ? "archive sha256 " + StringAt(*ext, {"source", "digest", "sha256"})
                              : "git " + StringAt(*ext, {"source", "uri"}) + " @ " + commit;
    // "python 3.11, torch 2.9, cuda 13.0, arch 9.0, linux_x86_64": the axes the cell has.
    for (auto [label, key] : {std::pair{"python ", "python"},
                              {"torch ", "torch"},
                              {"cuda ", "cuda"},
                              {"arch ", "archList"},
                              {"", "platform"}}) {
      std::string value = StringAt(*ext, {"cell", key});
      if (!value.empty()) s.cell += (s.cell.empty() ? "" : ", ") + std::string(label) + value;
    }
  }
  if (const json::object* def = ObjectAt(p, {"buildDefinition"})) {
    if (const json::array* deps = ArrayAt(*def, "resolvedDependencies")) {
      for (const json::value& d : *deps) {
        if (!d.is_object()) continue;
        std::string role = StringAt(d.as_object(), {"annotations", "role"});
        s.patches += role == "patch";
        s.consumed_wheels += role == "consumed-wheel";
      }
    }
  }
  s.started = StringAt(p, {"runDetails", "metadata", "startedOn"});
  s.finished = StringAt(p, {"runDetails", "metadata", "finishedOn"});
  if (const json::object* run = ObjectAt(p, {"runDetails"})) {
    if (const json::array* by = ArrayAt(*run, "byproducts");
        by != nullptr && !by->empty() && by->front().is_object()) {
      s.log_sha256 = StringAt(by->front().as_object(), {"digest", "sha256"});
    }
  }
  return s;
}

ValidationSummary ReadValidation(const json::object& p) {
  ValidationSummary s;
  s.verdict = StringAt(p, {"verdict"});
  s.gpu_name = StringAt(p, {"gpu", "name"});
  s.compute_capability = StringAt(p, {"gpu", "computeCapability"});
  s.validated_sha256 = StringAt(p, {"validatedWheel", "digest", "sha256"});
  s.finished = StringAt(p, {"run", "finishedOn"});
  if (const json::object* w = ObjectAt(p, {"validator", "worker"})) {
    std::string gpus;
    ReadWorker(*w, &s.worker, &gpus, nullptr, nullptr);
  }
  if (const json::array* cases = ArrayAt(p, "cases")) {
    for (const json::value& c : *cases) {
      if (!c.is_object()) continue;
      ++s.cases;
      s.cases_passed += BoolAt(c.as_object(), {"passed"});
    }
  }
  return s;
}

bool IsHex64(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

Result<Statement> ParseStatement(std::string_view payload) {
  FARM_ASSIGN_OR_RETURN(json::value doc, ParseJson(payload, "statement"));
  const json::object* o = doc.if_object();
  if (o == nullptr) return Status::InvalidArgument("statement: not a JSON object");
  if (OptionalString(*o, "_type") != kStatementType) {
    return Status::InvalidArgument("statement: _type is not " + std::string(kStatementType));
  }
  Statement st;
  const json::array* subjects = ArrayAt(*o, "subject");
  if (subjects == nullptr) return Status::InvalidArgument("statement: no subject array");
  for (const json::value& v : *subjects) {
    if (!v.is_object()) return Status::InvalidArgument("statement: a subject is not an object");
    Subject s{.name = StringAt(v.as_object(), {"name"}),
              .sha256 = StringAt(v.as_object(), {"digest", "sha256"})};
    if (!IsHex64(s.sha256)) {
      return Status::InvalidArgument("statement: subject " + s.name +
                                     " has no lowercase hex sha256 digest");
    }
    st.subjects.push_back(std::move(s));
  }
  if (st.subjects.empty()) return Status::InvalidArgument("statement: no subject");
  FARM_ASSIGN_OR_RETURN(st.predicate_type, RequiredString(*o, "predicateType", "statement"));
  const json::object* predicate = ObjectAt(*o, {"predicate"});
  if (predicate == nullptr) return Status::InvalidArgument("statement: predicate is not an object");
  if (st.predicate_type == kSlsaPredicateType) st.build = ReadBuild(*predicate);
  if (st.predicate_type == kValidationPredicateType) st.validation = ReadValidation(*predicate);
  return st;
}

}  // namespace farm::provenance
