UPDATE email_jobs SET leased_until = clock_timestamp() - interval '1 second' WHERE id = $1
