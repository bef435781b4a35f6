SELECT id FROM email_jobs WHERE id = $1 FOR UPDATE
