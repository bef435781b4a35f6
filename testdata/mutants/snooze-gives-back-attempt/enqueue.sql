INSERT INTO jobs(payload, run_at) VALUES ($1, clock_timestamp()+$2::interval) RETURNING id
