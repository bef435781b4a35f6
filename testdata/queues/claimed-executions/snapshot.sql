SELECT id, CASE state WHEN 'claimed' THEN 'running' ELSE state END AS state,
       coalesce(lease_until > clock_timestamp(), false) AS lease_live
FROM jobs ORDER BY id
