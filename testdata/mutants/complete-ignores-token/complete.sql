-- Bug: the completion deletes whichever execution row the job has, not the one its token
-- names: a worker whose job was reclaimed completes it under the new owner's lease.
WITH j AS (
  SELECT id FROM jobs
  WHERE id = $1 AND state = 'claimed' AND lease_until > clock_timestamp()
  FOR UPDATE
), mine AS (
  DELETE FROM claimed_executions c USING j
  WHERE c.job_id = j.id AND $2::bigint IS NOT NULL
  RETURNING c.job_id
), done AS (
  UPDATE jobs SET state = 'done' FROM mine WHERE jobs.id = mine.job_id RETURNING jobs.id
) SELECT count(*) FROM done
