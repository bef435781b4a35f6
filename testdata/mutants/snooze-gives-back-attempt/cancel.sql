-- A job not at an end of its life is cancelled, whoever holds it: its owner's completion,
-- failure or snooze then finds it not running and changes nothing.
WITH cancelled AS (
  UPDATE jobs SET state='cancelled', lease_until=NULL
  WHERE id=$1 AND state IN ('ready','running')
  RETURNING id
) SELECT count(*) FROM cancelled
