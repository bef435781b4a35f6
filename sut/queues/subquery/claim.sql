-- The seed's claim written as a subquery instead of a CTE: the same promises.
UPDATE jobs
SET state='running', generation=generation+1,
    lease_until=clock_timestamp()+$1::interval
WHERE id = (
  SELECT id FROM jobs
  WHERE state='ready' OR (state='running' AND lease_until<clock_timestamp())
  ORDER BY id
  FOR UPDATE SKIP LOCKED
  LIMIT 1
)
RETURNING id, generation
