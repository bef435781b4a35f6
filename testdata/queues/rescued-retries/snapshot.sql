SELECT id,
       CASE state WHEN 'available' THEN 'ready' WHEN 'retryable' THEN 'ready'
                  WHEN 'completed' THEN 'done' WHEN 'discarded' THEN 'dead' ELSE state END AS state,
       attempt AS generation,
       coalesce(attempted_at > clock_timestamp() - interval '1 second', false) AS lease_live,
       attempt AS attempts,
       errors[cardinality(errors)] AS error
FROM jobs ORDER BY id
