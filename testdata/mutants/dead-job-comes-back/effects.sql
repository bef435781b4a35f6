SELECT job_id, count(*) FROM fulfilled GROUP BY job_id ORDER BY job_id
