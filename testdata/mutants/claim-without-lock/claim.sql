-- Bug: the candidate is read without FOR UPDATE SKIP LOCKED, and the update does not re-check
-- that it is still eligible. Two concurrent claims can both pick the same job and both return
-- it with the same generation. Run one at a time, it behaves like the seed.
WITH candidate AS (
  SELECT id, generation FROM jobs
  WHERE state='ready' OR (state='running' AND lease_until<clock_timestamp())
  ORDER BY id
  LIMIT 1
)
UPDATE jobs AS j
SET state='running', generation=candidate.generation+1,
    lease_until=clock_timestamp()+$1::interval
FROM candidate
WHERE j.id=candidate.id
RETURNING j.id,j.generation
