-- At-least-once, as most Postgres queues are: the completion names the job alone. A worker
-- whose lease ran out, or whose job another worker reclaimed, still completes it.
WITH completed AS (
  UPDATE jobs SET state = 'done'
  WHERE id = $1 AND state = 'running' AND $2::bigint IS NOT NULL
  RETURNING id
) SELECT count(*) FROM completed
