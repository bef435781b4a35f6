INSERT INTO jobs(payload, unique_key) VALUES ($1, $2)
ON CONFLICT (unique_key) DO NOTHING
RETURNING id
