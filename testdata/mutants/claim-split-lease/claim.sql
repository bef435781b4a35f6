-- Bug: the claim is split into two transactions, "take the row" and "set its lease". This
-- statement is the first (and the second of this session's previous claim); a worker that
-- never sends its next statement on this connection (the claim's answer was lost, the
-- connection cut) leaves the job taken without a lease: lost.
WITH candidate AS (
  SELECT id FROM jobs
  WHERE (state='ready' OR (state='running' AND lease_until<clock_timestamp()))
    AND NOT lease_lost(taker, taker_app)
  ORDER BY id
  FOR UPDATE SKIP LOCKED
  LIMIT 1
), second_half AS (
  UPDATE jobs SET taker=NULL
  WHERE taker=pg_backend_pid() AND id NOT IN (SELECT id FROM candidate)
)
UPDATE jobs AS j
SET state='running', generation=j.generation+1,
    lease_until=clock_timestamp()+$1::interval,
    taker=pg_backend_pid(), taker_app=current_setting('application_name')
FROM candidate
WHERE j.id=candidate.id
RETURNING j.id,j.generation
