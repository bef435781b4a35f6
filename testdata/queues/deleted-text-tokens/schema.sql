-- Text ids, a finished job's row deleted, and a claim token in place of a generation: each claim
-- writes a fresh token into the job's row and hands it out, and a completion must present it.
-- seq keeps enqueue order for the claim order.
CREATE TABLE jobs (
  id text PRIMARY KEY DEFAULT 'job-' || gen_random_uuid(),
  seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  state text NOT NULL DEFAULT 'ready' CHECK (state IN ('ready','running')),
  token text,
  lease_until timestamptz,
  payload jsonb NOT NULL
);
