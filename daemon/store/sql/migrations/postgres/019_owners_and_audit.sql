-- PostgreSQL form of migrations/019_owners_and_audit.sql (same number, same meaning): BIGINT for
-- every integer (milliseconds overflow INTEGER), BIGSERIAL for AUTOINCREMENT ids.
-- Schema version 19: recipe names have owners, and every mutation leaves an audit record
-- (docs/security.md, "Who may change what").
--
-- A recipe name belongs to the principal (a token's name) that first submitted it; only
-- its owner and admins may build under it, since a name is what a build's compile-cache
-- namespace and its wheels' index entries are keyed by.
CREATE TABLE recipe_names (
  name TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  claimed_ms BIGINT NOT NULL,       -- when its first owner claimed it
  updated_ms BIGINT NOT NULL        -- when it last changed owner
);

-- A schedule submitted its builds as "schedule N"; it now submits as its creator, who
-- thereby owns them. Earlier scheduled builds get the creator of their schedule.
UPDATE builds SET submitted_by = (
    SELECT s.created_by FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id
    WHERE r.build_id = builds.id LIMIT 1)
  WHERE submitted_by LIKE 'schedule %'
    AND EXISTS (SELECT 1 FROM schedule_runs r WHERE r.build_id = builds.id);

-- Names in use are adopted by the submitter of their first build; a name that only a
-- schedule names yet, by the creator of its first schedule.
INSERT INTO recipe_names(name, owner, claimed_ms, updated_ms)
  SELECT b.recipe_name, b.submitted_by, b.created_ms, b.created_ms
  FROM builds b JOIN (SELECT MIN(id) AS id FROM builds GROUP BY recipe_name) f ON f.id = b.id;
INSERT INTO recipe_names(name, owner, claimed_ms, updated_ms)
  SELECT s.recipe_name, s.created_by, s.created_ms, s.created_ms
  FROM schedules s JOIN (SELECT MIN(id) AS id FROM schedules WHERE deleted_ms = 0
                         GROUP BY recipe_name) f ON f.id = s.id
  ON CONFLICT DO NOTHING;

-- Who did what, and whether it was allowed: one row per mutation (refusals included).
-- Never a token or a secret: principals are token names, details are redacted.
CREATE TABLE audit_log (
  id BIGSERIAL PRIMARY KEY,
  time_ms BIGINT NOT NULL,
  principal TEXT NOT NULL,          -- the token's name
  role TEXT NOT NULL,               -- its role then
  action TEXT NOT NULL,             -- "build.cancel", "name.transfer", ... (audit_log.h)
  target TEXT NOT NULL DEFAULT '',  -- "build 12", "recipe attn-example", ...
  outcome TEXT NOT NULL,            -- ok, denied, failed
  detail TEXT NOT NULL DEFAULT ''   -- the refusal or error, or what was done
);
CREATE INDEX audit_log_by_principal ON audit_log(principal, id);
