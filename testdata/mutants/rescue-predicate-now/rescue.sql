-- The rescuer: every running job whose attempt is older than the horizon becomes available.
-- FOR UPDATE rechecks the state of a row a completion changed meanwhile (River's issue 1302).
WITH stuck AS (
  SELECT id FROM jobs
  WHERE state = 'running' AND attempted_at < now() - interval '1 second'
  FOR UPDATE SKIP LOCKED
)
UPDATE jobs j SET state = 'available'
FROM stuck WHERE j.id = stuck.id
RETURNING j.id
