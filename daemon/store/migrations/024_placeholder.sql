-- Stands in for migration 024 of a branch developed alongside; replaced by it at merge.
SELECT 1;
