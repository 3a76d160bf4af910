-- Schema version 5: an operator's drain request survives the worker's own state reports,
-- and each job carries its recipe's attempt limit so lease expiry honours it.
ALTER TABLE workers ADD COLUMN drain_requested INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN max_attempts INTEGER NOT NULL DEFAULT 3;
