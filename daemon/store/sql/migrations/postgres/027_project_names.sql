-- PostgreSQL form of migrations/027_project_names.sql (same number, same meaning): BIGINT
-- for every integer; the name normalised exactly with regexp_replace.
-- Schema version 27: project (distribution) names have owners (docs/security.md, "Who may
-- change what"). A name, PEP 503 normalised, belongs to the principal whose build first
-- uploaded a wheel of it; a wheel of a name another principal owns fails farmd's wheel
-- check.
CREATE TABLE project_names (
  name TEXT PRIMARY KEY,            -- PEP 503 normalised
  owner TEXT NOT NULL,
  claimed_ms BIGINT NOT NULL,       -- when its first owner claimed it
  updated_ms BIGINT NOT NULL        -- when it last changed owner
);

-- Names already in the store are adopted by the submitter of the build of their first
-- wheel (the file name's first field, PEP 503 normalised).
INSERT INTO project_names(name, owner, claimed_ms, updated_ms)
  SELECT n.name, b.submitted_by, a.created_ms, a.created_ms
  FROM (SELECT MIN(id) AS id,
               regexp_replace(lower(split_part(filename, '-', 1)), '[-_.]+', '-', 'g') AS name
        FROM artifacts WHERE position('-' IN filename) > 1 GROUP BY 2) n
  JOIN artifacts a ON a.id = n.id
  JOIN jobs j ON j.id = a.job_id
  JOIN builds b ON b.id = j.build_id
  ON CONFLICT DO NOTHING;
