INSERT INTO jobs(payload, unique_key) VALUES ($1, $2)
ON CONFLICT (unique_key) WHERE state='ready' DO NOTHING
RETURNING id
