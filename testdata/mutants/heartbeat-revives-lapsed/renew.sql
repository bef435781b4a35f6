-- The worker's heartbeat: every live lease it holds runs for another $2 seconds. A lapsed one
-- stays lapsed (its job may be another worker's by now).
UPDATE jobs SET lease_until=clock_timestamp()+$2::int*interval '1 second'
WHERE locked_by=$1::text AND state='running'
RETURNING id
