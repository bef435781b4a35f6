-- The attempt's owner reports a failure: kept, then retried after 20 ms doubling per attempt,
-- or discarded.
WITH failed AS (
  UPDATE jobs SET errors = array_append(errors, $4::text),
    state = CASE WHEN NOT $3::boolean OR attempt >= max_attempts THEN 'discarded' ELSE 'retryable' END,
    scheduled_at = clock_timestamp() + interval '20 milliseconds' * power(2, attempt - 1)
  WHERE id = $1 AND state = 'running' AND attempt = $2
    AND attempted_at > clock_timestamp() - interval '1 second'
  RETURNING id
) SELECT count(*) FROM failed
