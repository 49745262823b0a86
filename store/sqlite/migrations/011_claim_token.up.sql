-- Version 11 gives Postgres claims a token (store/postgres), with which a
-- claim whose reply was lost in a broken connection finds the tasks it
-- leased. SQLite's claims run in the process and lose no reply: nothing
-- changes here, and the number keeps the two stores' versions alike.
SELECT 1;
