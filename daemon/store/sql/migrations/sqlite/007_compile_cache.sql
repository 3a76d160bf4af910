-- The compile cache's work in each attempt, as the worker reported it: compiles answered
-- from the cache and compiles run. -1 in both: the build ran without the cache (the recipe
-- or the worker turned it off, or the attempt ended before its build).
ALTER TABLE attempts ADD COLUMN cache_hits INTEGER NOT NULL DEFAULT -1;
ALTER TABLE attempts ADD COLUMN cache_misses INTEGER NOT NULL DEFAULT -1;
