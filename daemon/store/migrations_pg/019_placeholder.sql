-- Stands in for migration 019 of a branch developed alongside; replaced by it at merge.
SELECT 1;
