// ValidationAttempt: one attempt of a JOB_VALIDATE job, for the JobRunner that leased it,
// beside the build attempt (build_attempt.h).
// The wheels an earlier build made are fetched from farmd and proved here as a build job
// proves its own (validation.h), with the interpreter of the job's cell:
//   - a cell of a recipe with `environment:` (the lease carries its Python and torch):
//     that environment, provisioned as a build's is (the same cache and snapshots, so a
//     second validation in it clones its snapshot), the clean venv made over it;
//   - otherwise the probed interpreter SelectPython picks for the cell.
// For a stable-ABI wheel the cell is another torch of its matrix than it was built with
// (daemon/sched/fanout.h): the validation then proves the wheel with that torch.
// The source is fetched only when the validation script lives in it. Runs on the job's
// thread; not shared between threads.
#ifndef FARM_WORKER_ATTEMPT_VALIDATION_ATTEMPT_H_
#define FARM_WORKER_ATTEMPT_VALIDATION_ATTEMPT_H_

#include <optional>
#include <string>
#include <variant>

#include "common/status.h"
#include "worker/attempt/attempt_context.h"

namespace farm::agent {

class ValidationAttempt {
 public:
  // `ctx` (the attempt's context) must outlive this.
  explicit ValidationAttempt(AttemptContext& ctx) : ctx_(ctx) {}

  // Runs the attempt in workspace `ws`; returns how it ended (the JobRunner reports it).
  Outcome Run(LogShipper& log, const std::string& ws);

 private:
  // The interpreter (its path and Python version) the clean venv is made from, and the
  // toolkit that only sets CUDA_HOME when here; for a provisioned cell the environment is
  // made into <ws>/venv first (its cache pins held in provisioned_ until the attempt ends).
  // An Outcome when the attempt ends here.
  struct Interpreter {
    std::string path;
    std::string version;
    farm::v1::CudaToolkit toolkit;
  };
  std::variant<Interpreter, Outcome> ProvisionedInterpreter(LogShipper& log, const std::string& ws);
  std::variant<Interpreter, Outcome> ProbedInterpreter() const;

  AttemptContext& ctx_;
  std::optional<env::ProvisionedEnv> provisioned_;
};

}  // namespace farm::agent

#endif  // FARM_WORKER_ATTEMPT_VALIDATION_ATTEMPT_H_
