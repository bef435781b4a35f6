WITH second_half AS (
  UPDATE jobs SET taker=NULL WHERE taker=pg_backend_pid()
)
SELECT id, state, generation,
       coalesce(lease_until>clock_timestamp() AND NOT lease_lost(taker, taker_app), false) AS lease_live
FROM jobs ORDER BY id
