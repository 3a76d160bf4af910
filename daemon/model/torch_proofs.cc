#include "daemon/model/torch_proofs.h"

#include <algorithm>
#include <map>
#include <string>

#include "daemon/model/convert.h"

namespace farm::model {
namespace {

farm::v1::TorchProof Proof(const farm::v1::MatrixCell& cell, farm::v1::ProofState state,
                           int64_t job_id, const std::string& detail) {
  farm::v1::TorchProof p;
  *p.mutable_cell() = cell;
  p.set_state(state);
  p.set_job_id(job_id);
  p.set_detail(detail);
  return p;
}

// The build's own validation, as stored with the wheels of its counted attempt.
Result<farm::v1::TorchProof> OwnProof(store::Store& store, const farm::v1::MatrixCell& cell,
                                      const store::JobRow& built) {
  FARM_ASSIGN_OR_RETURN(auto artifacts, store.ListArtifacts(built.id));
  for (const store::ArtifactRow& a : artifacts) {
    if (a.attempt != built.attempt || a.validation.empty()) continue;
    auto report = ParseBlob<farm::v1::ValidationReport>(a.validation);
    switch (report.state()) {
      case farm::v1::VALIDATION_PASSED:
        return Proof(cell, farm::v1::PROOF_PASSED, built.id, "");
      case farm::v1::VALIDATION_FAILED:
        return Proof(cell, farm::v1::PROOF_FAILED, built.id, report.message());
      case farm::v1::VALIDATION_PENDING_HARDWARE:
        return Proof(cell, farm::v1::PROOF_PENDING, built.id, report.message());
      default:
        return Proof(cell, farm::v1::PROOF_NOT_RUN, built.id, report.message());
    }
  }
  return Proof(cell, farm::v1::PROOF_NOT_RUN, built.id, "the build stored no validation report");
}

farm::v1::TorchProof JobProof(const farm::v1::MatrixCell& cell, const store::JobRow& v) {
  switch (v.state) {
    case store::kJobSucceeded:
      return Proof(cell, farm::v1::PROOF_PASSED, v.id, "");
    case store::kJobFailed:
      return Proof(cell, farm::v1::PROOF_FAILED, v.id, v.error);
    case store::kJobCancelled:
      return Proof(cell, farm::v1::PROOF_NOT_RUN, v.id, "its validation job was cancelled");
    default:
      return Proof(cell, farm::v1::PROOF_PENDING, v.id, "");
  }
}

// The proofs with torches released after the build (builds/new_torch.h), after the
// matrix's: the newest validation job of each such cell.
void AddNewTorchProofs(const std::vector<store::JobRow>& validations,
                       std::vector<farm::v1::TorchProof>* out) {
  std::map<std::string, const store::JobRow*> newest;  // by cell
  std::vector<std::string> order;
  for (const store::JobRow& v : validations) {
    if (ParseBlob<farm::v1::JobNeeds>(v.needs).new_torch().empty()) continue;
    auto [it, fresh] = newest.try_emplace(v.cell, &v);
    if (fresh) order.push_back(v.cell);
    if (v.id > it->second->id) it->second = &v;
  }
  for (const std::string& blob : order) {
    const store::JobRow& v = *newest[blob];
    farm::v1::TorchProof p = JobProof(ParseBlob<farm::v1::MatrixCell>(blob), v);
    std::string release = ParseBlob<farm::v1::JobNeeds>(v.needs).new_torch();
    if (p.state() == farm::v1::PROOF_PASSED) {
      p.set_detail("torch " + release + " released after the build: validated without a rebuild");
    } else if (p.state() == farm::v1::PROOF_PENDING) {
      p.set_detail("torch " + release + " released after the build: validation-only job queued");
    }
    out->push_back(std::move(p));
  }
}

}  // namespace

Result<std::vector<farm::v1::TorchProof>> TorchProofs(store::Store& store,
                                                      const store::JobRow& job) {
  auto needs = ParseBlob<farm::v1::JobNeeds>(job.needs);
  std::vector<farm::v1::TorchProof> out;
  if (needs.validate_in_size() == 0) return out;
  store::JobRow built = job;
  if (job.reused_from > 0) {
    FARM_ASSIGN_OR_RETURN(built, store.GetJob(job.reused_from));
  }
  if (built.state != store::kJobSucceeded) {
    bool open = built.state == store::kJobPending || built.state == store::kJobRunning;
    for (const auto& cell : needs.validate_in()) {
      out.push_back(open ? Proof(cell, farm::v1::PROOF_PENDING, 0, "the build has not ended")
                         : Proof(cell, farm::v1::PROOF_NOT_RUN, 0, "the build did not succeed"));
    }
    return out;
  }
  FARM_ASSIGN_OR_RETURN(auto validations, store.ListValidationJobs(built.id, built.attempt));
  for (const farm::v1::MatrixCell& cell : needs.validate_in()) {
    std::string blob = cell.SerializeAsString();
    // The newest validation job in this cell stands (a later one was asked for again).
    auto newest = std::find_if(validations.rbegin(), validations.rend(),
                               [&blob](const store::JobRow& v) { return v.cell == blob; });
    if (blob == built.cell) {
      FARM_ASSIGN_OR_RETURN(farm::v1::TorchProof own, OwnProof(store, cell, built));
      // Validated again in its own cell (it waited for hardware): that job stands once ended.
      if (newest != validations.rend() && store::IsTerminal(newest->state)) {
        own = JobProof(cell, *newest);
      }
      out.push_back(std::move(own));
    } else if (newest == validations.rend()) {
      out.push_back(Proof(cell, farm::v1::PROOF_PENDING, 0, "no validation job queued yet"));
    } else {
      out.push_back(JobProof(cell, *newest));
    }
  }
  AddNewTorchProofs(validations, &out);
  return out;
}

Status AddTorchProofs(store::Store& store, const store::JobRow& row, farm::v1::Job* job) {
  FARM_ASSIGN_OR_RETURN(auto proofs, TorchProofs(store, row));
  // A torch is proven when every cell of it passed (with abi3, one per Python).
  std::vector<std::string> torches;
  for (const farm::v1::TorchProof& p : proofs) {
    const std::string& t = p.cell().torch();
    if (std::find(torches.begin(), torches.end(), t) == torches.end()) torches.push_back(t);
  }
  for (const std::string& t : torches) {
    bool all = std::all_of(proofs.begin(), proofs.end(), [&t](const farm::v1::TorchProof& p) {
      return p.cell().torch() != t || p.state() == farm::v1::PROOF_PASSED;
    });
    if (all) job->add_proven_torch(t);
  }
  for (farm::v1::TorchProof& p : proofs) *job->add_torch_proofs() = std::move(p);
  return Status::Ok();
}

}  // namespace farm::model
