-- PostgreSQL form of migrations/022_watches.sql (same number, same meaning).
ALTER TABLE schedules ADD COLUMN watch BYTEA NOT NULL DEFAULT '';
ALTER TABLE schedules ADD COLUMN watch_state TEXT NOT NULL DEFAULT '';
ALTER TABLE schedule_runs ADD COLUMN upstream_ms BIGINT NOT NULL DEFAULT 0;
