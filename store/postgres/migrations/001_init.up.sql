-- One row per task, one column per task.Record field: the row is the truth.
--
-- JSON is kept in json columns, not jsonb: json stores the text exactly as
-- given (whitespace, key order), which the store promises; jsonb would
-- rewrite it. Times are timestamptz at millisecond precision (the store
-- truncates); durations are whole milliseconds.
CREATE TABLE mcptasks_tasks (
    id                  text        NOT NULL PRIMARY KEY,
    principal           text        NOT NULL,
    tool                text        NOT NULL,
    args                json,                            -- NULL when empty
    client_capabilities json,                            -- NULL when empty
    status              text        NOT NULL
        CONSTRAINT mcptasks_tasks_status
        CHECK (status IN ('working', 'input_required', 'completed', 'failed', 'cancelled')),
    status_message      text        NOT NULL DEFAULT '',
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    ttl_ms              bigint      NOT NULL DEFAULT 0,  -- 0 or less: no limit
    poll_interval_ms    bigint      NOT NULL DEFAULT 0,  -- 0: unset
    -- When the TTL elapses, NULL without one. The store writes it:
    -- timestamptz arithmetic is not immutable, so it cannot be a generated
    -- column; the constraint keeps it honest.
    expires_at          timestamptz
        CONSTRAINT mcptasks_tasks_expires_at
        CHECK (expires_at IS NOT DISTINCT FROM
               CASE WHEN ttl_ms > 0 THEN created_at + ttl_ms * interval '1 millisecond' END),
    input_requests      json,                            -- object, NULL when none
    answers             json,                            -- object, NULL when none
    result              json,                            -- NULL when empty
    error               json,                            -- JSON-RPC error object, NULL when none
    cancel_requested    boolean     NOT NULL DEFAULT false,
    attempt             integer     NOT NULL DEFAULT 0,
    lease_owner         text        NOT NULL DEFAULT '',
    lease_expires_at    timestamptz                      -- NULL when unleased
) WITH (
    -- A task queue is a high-churn table: every task is claimed, heartbeaten
    -- every few seconds while it runs, and finished, then deleted when its
    -- TTL elapses. Claims, heartbeats and status messages change no indexed
    -- column (lease columns are deliberately not in any index), so they can
    -- be HOT updates that touch no index, as long as the page has room for
    -- the new row version: hence a fillfactor that keeps 30% of each page
    -- free.
    fillfactor = 70,
    -- Vacuum after 1% of the rows are dead instead of the default 20%, and
    -- refresh statistics after 2% changed instead of 10%: dead versions of
    -- hot rows otherwise pile up in the claim index's range and slow every
    -- claim, and stale statistics make the planner misjudge the live part.
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.02
);

-- Claims walk the live (non-terminal) tasks oldest first. Terminal tasks,
-- however many are kept, are not in the index; the claim query repeats the
-- predicate with the same literals so that the planner can use it.
CREATE INDEX mcptasks_tasks_claim ON mcptasks_tasks (created_at, id)
    WHERE status IN ('working', 'input_required');

-- Expiry sweeps read the earliest deadlines first; tasks without a TTL are
-- not in the index.
CREATE INDEX mcptasks_tasks_expires_at ON mcptasks_tasks (expires_at)
    WHERE expires_at IS NOT NULL;
