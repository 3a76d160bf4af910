-- Schema version 27: project (distribution) names have owners (docs/security.md, "Who may
-- change what"). A name, PEP 503 normalised, belongs to the principal whose build first
-- uploaded a wheel of it; a wheel of a name another principal owns fails farmd's wheel
-- check.
CREATE TABLE project_names (
  name TEXT PRIMARY KEY,            -- PEP 503 normalised
  owner TEXT NOT NULL,
  claimed_ms INTEGER NOT NULL,      -- when its first owner claimed it
  updated_ms INTEGER NOT NULL       -- when it last changed owner
);

-- Names already in the store are adopted by the submitter of the build of their first
-- wheel. The name is the file name's first field (PEP 427 escapes "-" as "_"), lower case,
-- its runs of "_" and "." made one "-" (runs of up to eight; longer ones do not occur in
-- names farmd accepted: a wheel's METADATA name must match it).
INSERT OR IGNORE INTO project_names(name, owner, claimed_ms, updated_ms)
  SELECT n.name, b.submitted_by, a.created_ms, a.created_ms
  FROM (SELECT MIN(id) AS id,
               replace(replace(replace(replace(replace(
                 lower(substr(filename, 1, instr(filename, '-') - 1)), '_', '-'), '.', '-'),
                 '--', '-'), '--', '-'), '--', '-') AS name
        FROM artifacts WHERE instr(filename, '-') > 1 GROUP BY 2) n
  JOIN artifacts a ON a.id = n.id
  JOIN jobs j ON j.id = a.job_id
  JOIN builds b ON b.id = j.build_id;
