WITH second_half AS (
  UPDATE jobs SET taker=NULL WHERE taker=pg_backend_pid()
)
INSERT INTO jobs(payload) VALUES ($1) RETURNING id
