#include "daemon/attest/attestor.h"

#include <boost/json.hpp>

#include "common/log.h"
#include "daemon/attest/facts.h"

namespace farm::attest {

namespace json = boost::json;

Status Attestor::SignAndKeep(const std::string& sha256, const std::string& kind, int64_t job_id,
                             int attempt, const std::string& statement) {
  FARM_ASSIGN_OR_RETURN(provenance::Envelope e, keys_->SignStatement(statement));
  store::ProvenanceRow row{.sha256 = sha256,
                           .kind = kind,
                           .job_id = job_id,
                           .attempt = attempt,
                           .keyid = e.signatures.front().keyid,
                           .envelope = provenance::EnvelopeJson(e),
                           .created_ms = clock_->NowUnixMs()};
  return store_->InsertProvenance(row).status();
}

Status Attestor::AttestBuild(const store::ArtifactRow& artifact) {
  FARM_ASSIGN_OR_RETURN(provenance::BuildFacts facts,
                        BuildFactsOf(*store_, artifact, keys_->farm_id(), clock_->NowUnixMs()));
  return SignAndKeep(artifact.sha256, "build", artifact.job_id, artifact.attempt,
                     provenance::BuildStatementJson(facts));
}

Status Attestor::AttestValidation(const store::JobRow& job, int attempt,
                                  const farm::v1::ValidationReport& report,
                                  const std::string& worker_id) {
  if (report.state() != farm::v1::VALIDATION_PASSED &&
      report.state() != farm::v1::VALIDATION_FAILED) {
    return Status::Ok();
  }
  bool validates = job.kind == store::kJobValidate;
  int64_t wheels_job = validates ? job.target_job_id : job.id;
  int wheels_attempt = validates ? job.target_attempt : attempt;
  FARM_ASSIGN_OR_RETURN(auto artifacts, store_->ListArtifacts(wheels_job));
  for (const auto& a : artifacts) {
    if (a.attempt != wheels_attempt) continue;
    provenance::ValidationFacts facts =
        ValidationFactsOf(*store_, {a.filename, a.sha256}, report, job, attempt, worker_id,
                          keys_->farm_id(), clock_->NowUnixMs());
    FARM_RETURN_IF_ERROR(SignAndKeep(a.sha256, "validation", job.id, attempt,
                                     provenance::ValidationStatementJson(facts)));
  }
  return Status::Ok();
}

Result<std::vector<provenance::Envelope>> Attestor::Envelopes(const std::string& sha256) {
  FARM_ASSIGN_OR_RETURN(auto rows, store_->ListProvenance(sha256, kMaxEnvelopesPerWheel));
  std::vector<provenance::Envelope> out;
  for (const auto& r : rows) {
    auto e = provenance::ParseEnvelope(r.envelope);
    if (!e.ok()) {
      return Status::DataLoss("stored provenance " + std::to_string(r.id) + ": " +
                              e.status().message());
    }
    out.push_back(std::move(e).value());
  }
  return out;
}

namespace {

// The statement `payload` about `to` instead of its subject; a build statement records
// the bytes it was made for, a validation keeps naming the bytes that ran.
Result<std::string> Rebind(const std::string& payload, const provenance::Subject& to) {
  boost::system::error_code ec;
  json::value doc = json::parse(payload, ec);
  if (ec || !doc.is_object()) return Status::DataLoss("a stored statement is not JSON");
  json::object& st = doc.as_object();
  json::value* subjects = st.if_contains("subject");
  if (subjects == nullptr || !subjects->is_array() || subjects->as_array().empty() ||
      !subjects->as_array()[0].is_object()) {
    return Status::DataLoss("a stored statement has no subject");
  }
  json::object from = subjects->as_array()[0].as_object();
  st["subject"] =
      json::array{json::object{{"name", to.name}, {"digest", json::object{{"sha256", to.sha256}}}}};
  json::value* predicate = st.if_contains("predicate");
  if (predicate != nullptr && predicate->is_object()) {
    json::object* def = predicate->as_object().if_contains("buildDefinition") != nullptr
                            ? predicate->as_object()["buildDefinition"].if_object()
                            : nullptr;
    json::object* internal = def != nullptr && def->if_contains("internalParameters") != nullptr
                                 ? (*def)["internalParameters"].if_object()
                                 : nullptr;
    if (internal != nullptr) (*internal)["relabelledFrom"] = from;
  }
  return json::serialize(doc);
}

}  // namespace

Status Attestor::AttestRelabelled(const std::string& from_sha256, const provenance::Subject& to) {
  FARM_ASSIGN_OR_RETURN(auto existing, store_->ListProvenance(to.sha256, 1));
  if (!existing.empty()) return Status::Ok();
  FARM_ASSIGN_OR_RETURN(auto rows, store_->ListProvenance(from_sha256, kMaxEnvelopesPerWheel));
  for (const auto& r : rows) {
    FARM_ASSIGN_OR_RETURN(provenance::Envelope e, provenance::ParseEnvelope(r.envelope));
    FARM_ASSIGN_OR_RETURN(std::string statement, Rebind(e.payload, to));
    FARM_RETURN_IF_ERROR(SignAndKeep(to.sha256, r.kind, r.job_id, r.attempt, statement));
  }
  return Status::Ok();
}

Result<provenance::PublicKey> Attestor::RotateKey() { return keys_->Rotate(); }

Result<provenance::PublicKey> Attestor::RevokeKey(const std::string& keyid_prefix,
                                                  const std::string& reason) {
  FARM_ASSIGN_OR_RETURN(provenance::PublicKey revoked, keys_->Revoke(keyid_prefix, reason));
  FARM_ASSIGN_OR_RETURN(int resigned, Resign(revoked.keyid));
  log::Info("re-signed " + std::to_string(resigned) +
            " provenance statement(s) of the revoked key " + revoked.keyid);
  return revoked;
}

Result<int> Attestor::Resign(const std::string& keyid) {
  constexpr int kPage = 500;
  int done = 0;
  int64_t after = 0;
  for (int page = 0; page < 1'000'000; ++page) {
    FARM_ASSIGN_OR_RETURN(auto rows, store_->ListProvenanceSignedBy(keyid, after, kPage));
    for (const auto& r : rows) {
      FARM_ASSIGN_OR_RETURN(provenance::Envelope old, provenance::ParseEnvelope(r.envelope));
      FARM_ASSIGN_OR_RETURN(provenance::Envelope e, keys_->SignStatement(old.payload));
      FARM_RETURN_IF_ERROR(
          store_->ResignProvenance(r.id, e.signatures.front().keyid, provenance::EnvelopeJson(e)));
      after = r.id;
      ++done;
    }
    if (static_cast<int>(rows.size()) < kPage) break;
  }
  return done;
}

}  // namespace farm::attest
