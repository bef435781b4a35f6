WITH second_half AS (
  UPDATE jobs SET state='done', finisher=NULL WHERE finisher=pg_backend_pid()
)
INSERT INTO jobs(payload) VALUES ($1) RETURNING id
