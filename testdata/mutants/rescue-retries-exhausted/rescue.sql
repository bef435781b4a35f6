-- The rescuer: a running job whose attempt is older than the horizon is stuck; it is retried
-- after its backoff, or discarded when that was its last attempt.
WITH stuck AS (
  SELECT id FROM jobs
  WHERE state = 'running' AND attempted_at < clock_timestamp() - interval '1 second'
  FOR UPDATE SKIP LOCKED
)
UPDATE jobs j
SET state = 'retryable',
    scheduled_at = clock_timestamp() + interval '20 milliseconds' * power(2, j.attempt - 1)
FROM stuck WHERE j.id = stuck.id
RETURNING j.id
