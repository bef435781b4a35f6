-- A job by a key: nothing where a job that is ready or running (waiting, or worked) holds it;
-- the partial index frees the key once its job is done, dead or cancelled.
INSERT INTO jobs(payload, unique_key) VALUES ($1, $2)
ON CONFLICT (unique_key) WHERE state IN ('ready','running') DO NOTHING
RETURNING id
