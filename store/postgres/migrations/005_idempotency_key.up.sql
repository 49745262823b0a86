-- The idempotency key of the request that created the task (NULL when it
-- carried none). One task per principal and key: the unique index makes
-- concurrent creates with one key insert one row; Create clears the key of
-- a task whose TTL ended before it inserts a new one. A nullable column
-- without a default is added without rewriting the table; the index is
-- built under a lock that blocks writes while it scans the table.
ALTER TABLE mcptasks_tasks ADD COLUMN idempotency_key text;
CREATE UNIQUE INDEX mcptasks_tasks_idempotency_key ON mcptasks_tasks (principal, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
