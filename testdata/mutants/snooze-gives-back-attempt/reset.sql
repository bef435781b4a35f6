INSERT INTO retry_policy VALUES (3, interval '100 milliseconds', 2)
