-- The memory each job asks of the worker that runs it, copied from its recipe at submit so
-- placement reads it with the job: one compile job (gb_per_compile_job) and the GPU memory
-- of its validation script (validation.gpu_memory_gb), in MiB. On a unified-memory host
-- (GB10) both come out of the same RAM. Jobs submitted before this have 0: no memory check.
ALTER TABLE jobs ADD COLUMN compile_mib INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN validation_mib INTEGER NOT NULL DEFAULT 0;
