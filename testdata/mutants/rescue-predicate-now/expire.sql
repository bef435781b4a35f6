-- Moves the attempt back past the horizon: the lease ended a second ago.
UPDATE jobs SET attempted_at = clock_timestamp() - interval '2 seconds' WHERE id = $1
