-- Bug: the completion checks that the job is claimed and its lease live, not that its own
-- execution is the job's: a worker whose job was reclaimed completes it under the new owner.
WITH done AS (
  UPDATE jobs SET state = 'done'
  WHERE id = $1 AND state = 'claimed' AND $2::bigint IS NOT NULL AND lease_until > clock_timestamp()
  RETURNING id
), gone AS (
  DELETE FROM claimed_executions c USING done WHERE c.id = $2 AND c.job_id = done.id
) SELECT count(*) FROM done
