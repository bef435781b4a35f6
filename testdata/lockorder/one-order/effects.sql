SELECT job_id, count(*) FROM transfers GROUP BY job_id ORDER BY job_id
