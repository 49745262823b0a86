-- One row per task, one column per task.Record field.
-- Times are unix milliseconds (UTC); JSON values are kept byte for byte.
CREATE TABLE tasks (
    id                  TEXT    NOT NULL PRIMARY KEY,
    principal           TEXT    NOT NULL,
    tool                TEXT    NOT NULL,
    args                TEXT,                         -- JSON, NULL when empty
    client_capabilities TEXT,                         -- JSON, NULL when empty
    status              TEXT    NOT NULL,
    status_message      TEXT    NOT NULL DEFAULT '',
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    ttl_ms              INTEGER NOT NULL DEFAULT 0,   -- 0: no limit
    poll_interval_ms    INTEGER NOT NULL DEFAULT 0,   -- 0: unset
    input_requests      TEXT,                         -- JSON object, NULL when none
    answers             TEXT,                         -- JSON object, NULL when none
    result              TEXT,                         -- JSON, NULL when empty
    error               TEXT,                         -- JSON-RPC error object, NULL when none
    cancel_requested    INTEGER NOT NULL DEFAULT 0,
    attempt             INTEGER NOT NULL DEFAULT 0,
    lease_owner         TEXT    NOT NULL DEFAULT '',
    lease_expires_at    INTEGER,                      -- NULL when unleased
    -- When the TTL elapses; NULL when the task has none.
    expires_at          INTEGER GENERATED ALWAYS AS
                            (CASE WHEN ttl_ms > 0 THEN created_at + ttl_ms END) STORED
);

-- Claims walk the live (non-terminal) tasks oldest first and filter on the
-- lease, the TTL and the tool inside the index: terminal tasks, however
-- many are kept, are not in it.
CREATE INDEX tasks_claim ON tasks (created_at, id, lease_expires_at, expires_at, tool)
    WHERE status IN ('working', 'input_required');

-- Expiry sweeps read the oldest deadlines first; tasks without TTL are not in it.
CREATE INDEX tasks_expires_at ON tasks (expires_at) WHERE expires_at IS NOT NULL;
