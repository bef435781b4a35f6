WITH sent AS (
  UPDATE email_jobs SET status = 'sent'
  WHERE id = $1 AND status = 'sending' AND fence = $2 AND leased_until > clock_timestamp()
  RETURNING id
) SELECT count(*) FROM sent
