SELECT id,
       CASE state WHEN 'available' THEN 'ready' WHEN 'completed' THEN 'done' ELSE state END AS state,
       attempt AS generation,
       coalesce(attempted_at > clock_timestamp() - interval '1 second', false) AS lease_live
FROM jobs ORDER BY id
