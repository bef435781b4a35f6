INSERT INTO accounts VALUES (1, 0), (2, 0), (3, 0)
