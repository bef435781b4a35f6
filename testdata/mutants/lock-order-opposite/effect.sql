-- Job j moves a unit from account 1 + (j+1) % 2 to account 1 + (j+1) % 3 (job 1 from 1 to 3,
-- job 2 from 2 to 1, job 3 from 1 to 2), and locks the account it debits first: two jobs
-- moving between the same accounts in opposite directions lock them in opposite orders.
WITH route AS (
  SELECT 1 + ($1::bigint + 1) % 2 AS debit, 1 + ($1::bigint + 1) % 3 AS credit
), locked AS (
  SELECT a.id FROM accounts a, route r
  WHERE a.id IN (r.debit, r.credit)
  ORDER BY a.id = r.debit DESC
  FOR UPDATE OF a
), moved AS (
  UPDATE accounts SET balance = balance + CASE WHEN id = (SELECT debit FROM route) THEN -1 ELSE 1 END
  WHERE id IN (SELECT id FROM locked)
  RETURNING id
)
INSERT INTO transfers(job_id)
SELECT $1::bigint WHERE (SELECT count(*) FROM moved) > 0
