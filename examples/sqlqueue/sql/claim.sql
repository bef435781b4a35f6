UPDATE email_jobs AS j
SET status = 'sending', fence = j.fence + 1, leased_until = clock_timestamp() + $1::interval
WHERE j.id = (
  SELECT id FROM email_jobs
  WHERE status = 'queued' OR (status = 'sending' AND leased_until < clock_timestamp())
  ORDER BY id
  FOR UPDATE SKIP LOCKED
  LIMIT 1
)
RETURNING j.id, j.fence
