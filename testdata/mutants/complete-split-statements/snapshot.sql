WITH second_half AS (
  UPDATE jobs SET state='done', finisher=NULL WHERE finisher=pg_backend_pid()
)
SELECT id, state_of(state, finisher, finisher_app) AS state, generation,
       coalesce(lease_until>clock_timestamp(), false) AS lease_live
FROM jobs ORDER BY id
