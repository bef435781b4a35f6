WITH candidate AS (
  SELECT id FROM jobs WHERE state = 'available'
  ORDER BY id
  FOR UPDATE SKIP LOCKED
  LIMIT 1
)
UPDATE jobs j
SET state = 'running', attempt = j.attempt + 1, attempted_at = clock_timestamp(),
    attempted_by = array_append(j.attempted_by, $1::text)
FROM candidate
WHERE j.id = candidate.id
RETURNING j.id, j.attempt
