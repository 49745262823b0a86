-- Suspended tasks: a task waiting for input (input_required) that no worker
-- holds waits for its answers, not for a worker; only the answer makes it
-- claimable again (store.Claimable). Claims walk this index, which leaves
-- suspended tasks out, so that a million of them cost a claim nothing.
-- mcptasks_tasks_claim stays for the counts of every live task.
CREATE INDEX mcptasks_tasks_claimable ON mcptasks_tasks (created_at, id)
    WHERE status = 'working' OR (status = 'input_required' AND lease_owner <> '');
