-- Stands in for migration 017 of a branch developed alongside; replaced by it at merge.
SELECT 1;
