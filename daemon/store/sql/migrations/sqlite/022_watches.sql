-- Schema version 22: upstream watches (daemon/cron/watch.h, docs/schedules.md "Watches").
--
-- A schedule fires either on its cron expression or when its watch sees something new
-- upstream. watch: the serialized farm.v1.UpstreamWatch ('' for a cron schedule).
-- watch_state: what the watch has seen (daemon/cron/watch_state.h), written in the same
-- transaction as the run a change fired, so a watch fires once per change across a crash.
ALTER TABLE schedules ADD COLUMN watch BLOB NOT NULL DEFAULT '';
ALTER TABLE schedules ADD COLUMN watch_state TEXT NOT NULL DEFAULT '';
-- upstream_ms: when the upstream change a watch run answers was published (the index's
-- upload time), or first seen; 0 for other runs. Coverage measures release-to-wheel by it.
ALTER TABLE schedule_runs ADD COLUMN upstream_ms INTEGER NOT NULL DEFAULT 0;
