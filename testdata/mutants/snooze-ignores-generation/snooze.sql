WITH snoozed AS (
  UPDATE jobs SET state='ready', lease_until=NULL, run_at=clock_timestamp()+$3::interval
  WHERE id=$1 AND state='running' AND $2::bigint IS NOT NULL
  RETURNING id
) SELECT count(*) FROM snoozed
