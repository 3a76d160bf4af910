// The two in-toto Statement v1 documents the farm signs for each wheel (docs/provenance.md):
//
//  - build provenance: predicate SLSA Provenance v1. Subject: the wheel's file name and
//    sha256. Builder: the farm (builder.id) and the worker that ran the build, with what
//    its probe found (GPUs, driver, toolkits) as a builder dependency. Build definition:
//    the recipe text's digest, the project (the wheel's PEP 503 name) and the principal
//    that owns it on the farm, the source (archive digest or git commit), the patches'
//    digests, the matrix cell, the wheels consumed from other builds, and the Python,
//    torch and CUDA toolkit of the environment (digests where the farm knows them). Run
//    details: start and end, the attempt, and the digest of the build log.
//  - validation: predicate kValidationPredicateType. Subject: the same wheel. The GPU (name,
//    compute capability) it ran on, the verdict, each case's figures, and the worker.
//
// The builders take plain facts (filled by farmd from its store) and return the JSON
// payload to sign; ParseStatement reads a payload back for verification and display.
#ifndef FARM_COMMON_PROVENANCE_STATEMENT_H_
#define FARM_COMMON_PROVENANCE_STATEMENT_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace farm::provenance {

inline constexpr char kStatementType[] = "https://in-toto.io/Statement/v1";
inline constexpr char kSlsaPredicateType[] = "https://slsa.dev/provenance/v1";
inline constexpr char kValidationPredicateType[] =
    "urn:gpu-wheel-farm:attestation:gpu-validation:v1";
inline constexpr char kBuildType[] = "urn:gpu-wheel-farm:build-type:wheel:v1";

// "urn:gpu-wheel-farm:farm:<farm_id>": the SLSA builder.id of a farm.
std::string BuilderId(std::string_view farm_id);

struct Subject {
  std::string name;    // the wheel's file name
  std::string sha256;  // lowercase hex
};

// An in-toto ResourceDescriptor: a named input with digests and facts about it.
struct Resource {
  std::string name;
  std::string uri;
  std::string sha256;      // "" when not known
  std::string git_commit;  // "" unless a git source
  std::map<std::string, std::string> annotations;
};

struct GpuFacts {
  std::string name;
  std::string compute_capability;  // "9.0"
  std::string uuid;
};

// A worker as its probe described it when it registered.
struct WorkerFacts {
  std::string id;
  std::string name;
  std::string hostname;
  std::string platform;  // "linux_x86_64"
  std::string driver_version;
  std::string driver_cuda_version;
  std::vector<GpuFacts> gpus;
  std::vector<std::string> toolkits;  // "13.0 at /usr/local/cuda"
};

struct CellFacts {
  std::string python, torch, cuda, arch_list, platform;
};

struct BuildFacts {
  Subject wheel;
  std::string farm_id;
  std::string farmd_version;
  WorkerFacts worker;
  std::string recipe_name;
  std::string recipe_version;
  std::string recipe_sha256;  // of the recipe text as submitted
  std::string project;        // the wheel's distribution name, PEP 503 normalised
  std::string project_owner;  // the principal that owns `project` on the farm
  std::string submitted_by;   // the principal that submitted the build
  CellFacts cell;
  Resource source;  // an archive (sha256) or a git repository (uri, git_commit)
  std::vector<Resource> patches;
  std::vector<Resource> consumed_wheels;  // wheels of required builds installed for it
  std::vector<Resource> environment;      // python, torch, cuda-toolkit, ...
  std::string validation_script_sha256;   // "" when the script is part of the source
  int64_t build_id = 0;
  int64_t job_id = 0;
  int attempt = 0;
  int64_t started_ms = 0;
  int64_t finished_ms = 0;
  std::string log_sha256;  // over the log's first `log_lines` lines, each text + "\n"
  int64_t log_lines = 0;
};

struct CaseFacts {
  std::string name;
  bool passed = false;
  double cosine = 0, relative_l1 = 0, rmse = 0;
  double throughput = 0, baseline_throughput = 0;
  std::string throughput_unit, baseline;
};

struct ValidationFacts {
  Subject wheel;
  Subject validated;  // the bytes that ran; equals `wheel` unless it was relabelled since
  std::string farm_id;
  std::string verdict;  // "passed" or "failed"
  std::string gpu_name;
  std::string compute_capability;  // "12.0"
  std::string message;
  std::vector<CaseFacts> cases;
  WorkerFacts worker;
  int64_t job_id = 0;  // the job that ran it (a build job or a validation job)
  int attempt = 0;
  int64_t finished_ms = 0;
};

// The statements' JSON, ready to sign.
std::string BuildStatementJson(const BuildFacts& facts);
std::string ValidationStatementJson(const ValidationFacts& facts);

// What a verifier shows of a statement.
struct BuildSummary {
  std::string builder_id;
  std::string worker;       // "gpu-box-1 (host gpu-box-1)"
  std::string worker_gpus;  // "NVIDIA H100 80GB HBM3 (9.0)", comma separated
  std::string driver;       // "580.65 (CUDA 13.0)"
  std::string toolkits;
  std::string recipe;         // "attn_example 1.0 (recipe sha256 ...)"
  std::string project;        // "attn-example"; "" in statements from before owners
  std::string project_owner;  // its owner as the statement names it; "" when none
  std::string source;         // "archive sha256 ..." or "git URL @ COMMIT"
  std::string cell;           // "python 3.11, cuda 13.0, arch 9.0;12.0a, linux_x86_64"
  std::string started, finished;
  std::string log_sha256;
  int patches = 0;
  int consumed_wheels = 0;
};

struct ValidationSummary {
  std::string verdict;  // "passed" / "failed"
  std::string gpu_name;
  std::string compute_capability;
  std::string worker;
  std::string validated_sha256;
  std::string finished;
  int cases = 0;
  int cases_passed = 0;
};

struct Statement {
  std::vector<Subject> subjects;
  std::string predicate_type;
  BuildSummary build;            // for kSlsaPredicateType
  ValidationSummary validation;  // for kValidationPredicateType
};

// Parses a statement payload. InvalidArgument when it is not JSON, not an in-toto
// Statement v1, has no subject with a sha256 digest, or a predicate that is not an object.
// Members of the predicate that are absent are left empty: the signature, not the
// completeness of the predicate, is what a verifier decides on.
Result<Statement> ParseStatement(std::string_view payload);

}  // namespace farm::provenance

#endif  // FARM_COMMON_PROVENANCE_STATEMENT_H_
