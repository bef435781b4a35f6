-- Separate claim paths, each served by one of the seed's partial indexes: ready jobs in id
-- order (jobs_ready), else the longest-expired running job (jobs_expired). Done rows are never
-- visited, so the claim's cost does not grow with history. The expired path runs only when the
-- ready path found nothing: the Append under LIMIT 1 stops at its first row. The clock is read
-- once, in an InitPlan: a bare clock_timestamp() is volatile, so it could only filter the
-- index's rows, and with many live leases and nothing eligible the claim would read them all.
WITH ready AS (
  SELECT id FROM jobs
  WHERE state='ready'
  ORDER BY id
  FOR UPDATE SKIP LOCKED
  LIMIT 1
), expired AS (
  SELECT id FROM jobs
  WHERE state='running' AND lease_until<(SELECT clock_timestamp())
  ORDER BY lease_until, id
  FOR UPDATE SKIP LOCKED
  LIMIT 1
), candidate AS (
  (SELECT id FROM ready) UNION ALL (SELECT id FROM expired) LIMIT 1
)
UPDATE jobs AS j
SET state='running', generation=j.generation+1,
    lease_until=clock_timestamp()+$1::interval
FROM candidate
WHERE j.id=candidate.id
RETURNING j.id, j.generation
