-- A plain UPDATE with RETURNING, counted: the same fence as the seed's, written differently.
WITH completed AS (
  UPDATE jobs SET state='done'
  WHERE id=$1 AND generation=$2 AND state='running'
    AND clock_timestamp()<lease_until
  RETURNING 1
) SELECT count(*)::int FROM completed
