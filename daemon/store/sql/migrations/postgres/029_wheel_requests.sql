-- PostgreSQL form of migrations/028_wheel_requests.sql (same number, same meaning): BIGINT for
-- every integer, BIGSERIAL for AUTOINCREMENT ids.
-- Schema version 28: wheel requests (daemon/requests/, docs/requests.md).
--
-- wheel_requests: one row per distinct cell people asked for. request_key is a digest of
-- the request's fields as checked (daemon/requests/spec.h): UNIQUE (request_key) is what
-- merges identical requests into one row, and so into one build, whatever the number of
-- farmd threads filing them at once. state is a requests::State value; reason says why a
-- request was refused or failed; decided_by is the admin who refused it ("" when the
-- farm's matching did, which a later identical request evaluates again).
CREATE TABLE wheel_requests (
  id BIGSERIAL PRIMARY KEY,
  request_key TEXT NOT NULL UNIQUE,
  package TEXT NOT NULL,
  version TEXT NOT NULL,
  python TEXT NOT NULL,
  torch TEXT NOT NULL,
  cuda TEXT NOT NULL,
  compute_capability TEXT NOT NULL,
  platform TEXT NOT NULL,
  state BIGINT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  decided_by TEXT NOT NULL DEFAULT '',
  recipe_name TEXT NOT NULL DEFAULT '',
  arch_list TEXT NOT NULL DEFAULT '',
  build_id BIGINT NOT NULL DEFAULT 0,
  job_id BIGINT NOT NULL DEFAULT 0,
  wheel TEXT NOT NULL DEFAULT '',
  filings BIGINT NOT NULL DEFAULT 0,
  first_by TEXT NOT NULL DEFAULT '',
  created_ms BIGINT NOT NULL,
  updated_ms BIGINT NOT NULL
);
CREATE INDEX wheel_requests_state ON wheel_requests(state, id);

-- wheel_request_filings: who filed each request and when (every requester follows the
-- one row), and what the per-principal and per-address request quotas count. principal
-- is "" for an anonymous request, whose address is then recorded.
CREATE TABLE wheel_request_filings (
  id BIGSERIAL PRIMARY KEY,
  request_id BIGINT NOT NULL REFERENCES wheel_requests(id),
  principal TEXT NOT NULL,
  address TEXT NOT NULL,
  created_ms BIGINT NOT NULL
);
CREATE INDEX wheel_request_filings_principal ON wheel_request_filings(principal, created_ms);
CREATE INDEX wheel_request_filings_address ON wheel_request_filings(address, created_ms);
CREATE INDEX wheel_request_filings_request ON wheel_request_filings(request_id);
