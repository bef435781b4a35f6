-- Bug: the rescuer's horizon is half the lease: it makes jobs available while their attempt
-- still runs, and another worker claims them.
WITH stuck AS (
  SELECT id FROM jobs
  WHERE state = 'running' AND attempted_at < clock_timestamp() - interval '500 milliseconds'
  FOR UPDATE SKIP LOCKED
)
UPDATE jobs j SET state = 'available'
FROM stuck WHERE j.id = stuck.id
RETURNING j.id
