INSERT INTO retry_policy VALUES (3, interval '200 milliseconds', 2)
