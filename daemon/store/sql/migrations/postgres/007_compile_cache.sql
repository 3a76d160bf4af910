-- PostgreSQL form of migrations/007_compile_cache.sql (same number, same meaning): BIGINT for every
-- integer (milliseconds overflow INTEGER), BIGSERIAL for AUTOINCREMENT ids, BYTEA for BLOB.
-- The compile cache's work in each attempt, as the worker reported it: compiles answered
-- from the cache and compiles run. -1 in both: the build ran without the cache (the recipe
-- or the worker turned it off, or the attempt ended before its build).
ALTER TABLE attempts ADD COLUMN cache_hits BIGINT NOT NULL DEFAULT -1;
ALTER TABLE attempts ADD COLUMN cache_misses BIGINT NOT NULL DEFAULT -1;
