WITH snoozed AS (
  UPDATE jobs SET state='ready', lease_until=NULL, run_at=clock_timestamp()+$3::interval, attempts=attempts-1
  WHERE id=$1 AND state='running' AND generation=$2
    AND lease_until>clock_timestamp()
  RETURNING id
) SELECT count(*) FROM snoozed
