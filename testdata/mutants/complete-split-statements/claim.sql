WITH candidate AS (
  SELECT id FROM jobs
  WHERE state_of(state, finisher, finisher_app)='ready'
     OR (state_of(state, finisher, finisher_app)='running' AND lease_until<clock_timestamp())
  ORDER BY id
  FOR UPDATE SKIP LOCKED
  LIMIT 1
), second_half AS (
  UPDATE jobs SET state='done', finisher=NULL
  WHERE finisher=pg_backend_pid() AND id NOT IN (SELECT id FROM candidate)
)
UPDATE jobs AS j
SET state='running', generation=j.generation+1,
    lease_until=clock_timestamp()+$1::interval, finisher=NULL
FROM candidate
WHERE j.id=candidate.id
RETURNING j.id,j.generation
