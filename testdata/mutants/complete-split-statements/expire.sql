WITH second_half AS (
  UPDATE jobs SET state='done', finisher=NULL WHERE finisher=pg_backend_pid() AND id<>$1
)
UPDATE jobs SET lease_until=clock_timestamp()-interval '1 second' WHERE id=$1
