-- Schema version 9: tokens can expire and be revoked (revocation is checked on every call,
-- so it takes effect at once), and a cancelled job records who cancelled it.
ALTER TABLE tokens ADD COLUMN expires_ms INTEGER NOT NULL DEFAULT 0;   -- 0: never
ALTER TABLE tokens ADD COLUMN revoked_ms INTEGER NOT NULL DEFAULT 0;   -- 0: not revoked
ALTER TABLE jobs ADD COLUMN cancelled_by TEXT NOT NULL DEFAULT '';
