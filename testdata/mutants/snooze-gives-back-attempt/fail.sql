-- The owner of a live lease reports a failure: the attempt counts, the error is kept, and the
-- job waits its backoff (base x factor^(attempts-1)) or, once its attempts ran out or when the
-- failure is final, is dead.
WITH failed AS (
  UPDATE jobs AS j
  SET attempts=j.attempts+1, last_error=$4::text, lease_until=NULL,
      state=CASE WHEN NOT $3::boolean OR j.attempts+1>=p.max_attempts THEN 'dead' ELSE 'ready' END,
      run_at=clock_timestamp()+p.backoff*power(p.factor, j.attempts)
  FROM retry_policy p
  WHERE j.id=$1 AND j.state='running' AND j.generation=$2
    AND j.lease_until>clock_timestamp()
  RETURNING j.id
) SELECT count(*) FROM failed
