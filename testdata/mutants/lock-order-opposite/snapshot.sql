SELECT id, state, generation, coalesce(lease_until>clock_timestamp(), false) AS lease_live
FROM jobs ORDER BY id
