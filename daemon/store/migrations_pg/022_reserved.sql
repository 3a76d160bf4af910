-- Schema version 22 is the upstream watches' tables, which land separately; this no-op
-- keeps the numbers without a gap until they do, and is replaced by them.
SELECT 1;
