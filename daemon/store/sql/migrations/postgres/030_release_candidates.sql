-- PostgreSQL form of migrations/030_release_candidates.sql (same number, same meaning):
-- BIGINT for every integer.
-- Schema version 30: builds against a torch release candidate (docs/schedules.md, "Release
-- candidates"). A build job whose cell's torch came from a pre-release index (or is a PEP 440
-- pre-release) is marked at submit; its wheels stay out of the default index views and a
-- final release's build of the cell replaces it in coverage. The RC build stays recorded.
ALTER TABLE jobs ADD COLUMN release_candidate BIGINT NOT NULL DEFAULT 0;
