WITH candidate AS (
  SELECT id FROM jobs
  WHERE state = 'ready' OR (state = 'running' AND lease_until < clock_timestamp())
  ORDER BY seq
  FOR UPDATE SKIP LOCKED
  LIMIT 1
)
UPDATE jobs AS j
SET state = 'running', token = gen_random_uuid()::text,
    lease_until = clock_timestamp() + $1::interval
FROM candidate
WHERE j.id = candidate.id
RETURNING j.id, j.token
