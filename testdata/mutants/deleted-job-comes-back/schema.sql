-- uuid ids, and a finished job's row is deleted. seq keeps enqueue order for the claim order.
CREATE TABLE jobs (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  state text NOT NULL DEFAULT 'ready' CHECK (state IN ('ready','running')),
  generation bigint NOT NULL DEFAULT 0,
  lease_until timestamptz,
  payload jsonb NOT NULL
);
