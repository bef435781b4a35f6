SELECT id, state, generation, coalesce(lease_until>clock_timestamp(), false) AS lease_live,
       attempts, last_error
FROM jobs ORDER BY id
