-- The owner's heartbeat: a live lease of this generation runs for another $3 from now; a lapsed
-- one, or another generation's, is left alone.
WITH renewed AS (
  UPDATE jobs SET lease_until=clock_timestamp()+$3::interval
  WHERE id=$1 AND state='running' AND generation=$2
    AND lease_until>clock_timestamp()
  RETURNING id
) SELECT count(*) FROM renewed
