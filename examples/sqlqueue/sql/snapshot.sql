SELECT id,
  CASE status WHEN 'queued' THEN 'ready' WHEN 'sending' THEN 'running' ELSE 'done' END AS state,
  fence AS generation,
  coalesce(leased_until > clock_timestamp(), false) AS lease_live
FROM email_jobs ORDER BY id
