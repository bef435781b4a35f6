INSERT INTO email_jobs (message) VALUES ($1) RETURNING id
