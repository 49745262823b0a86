-- The idempotency key of the request that created the task (NULL when it
-- carried none). One live task per principal and key: Create looks the key
-- up before it inserts, and clears it from a task whose TTL ended.
ALTER TABLE tasks ADD COLUMN idempotency_key TEXT;
CREATE UNIQUE INDEX tasks_idempotency_key ON tasks (principal, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
