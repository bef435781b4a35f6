INSERT INTO fulfilled(job_id) VALUES ($1)
