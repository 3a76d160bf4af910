-- Compile progress of a running attempt, as its worker reports it in heartbeats: units
-- done of units_total (total 0: only the count of compiles done is known). peak_rss_bytes
-- already exists and now also holds the live figure while the attempt runs.
ALTER TABLE attempts ADD COLUMN units_done INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN units_total INTEGER NOT NULL DEFAULT 0;
-- Expected durations look up the last successful job of the same cell (and recipe).
CREATE INDEX IF NOT EXISTS jobs_by_cell ON jobs(cell, state, id);
