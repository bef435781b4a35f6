-- The owner of a live lease puts its job back to wait $3: ready again once the delay ends, its
-- attempts as they were (they count as attempts fail), its generation kept for the next claim.
WITH snoozed AS (
  UPDATE jobs SET state='ready', lease_until=NULL, run_at=clock_timestamp()+$3::interval
  WHERE id=$1 AND state='running' AND generation=$2
    AND lease_until>clock_timestamp()
  RETURNING id
) SELECT count(*) FROM snoozed
