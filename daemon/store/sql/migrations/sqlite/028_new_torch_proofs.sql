-- Schema version 28: a stable-ABI wheel proven with a torch released after its build
-- (docs/recipes.md, "A new torch proven without a rebuild"). When a torch watch sees a new
-- release, farmd queues one validation job per wheel and cell of that torch; the row is
-- the job's unique key, written with the job in one transaction, so a farmd killed at any
-- moment and seeing the release again queues nothing twice.
CREATE TABLE new_torch_proofs (
  target_job_id INTEGER NOT NULL,   -- the build job whose wheels are proven
  cell_key TEXT NOT NULL,           -- recipe::ValidateCellKey of the new torch's cell
  torch TEXT NOT NULL,              -- the release, "2.12.0"
  job_id INTEGER NOT NULL,          -- the validation job
  created_ms INTEGER NOT NULL,
  PRIMARY KEY (target_job_id, cell_key)
);
CREATE INDEX new_torch_proofs_job ON new_torch_proofs(job_id);
