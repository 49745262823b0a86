-- Listing, searching and counting tasks (store.Lister: the operator console
-- and tasks/list), and the history of each task.
--
-- Every list query walks one index newest first: (created_at, id) is the
-- order and the keyset of pages. The INCLUDE columns let the filters that
-- the index does not order by be checked in the index (status and tool;
-- expires_at for tasks/list, which leaves expired tasks out), where the
-- visibility map allows an index-only scan. Indexes whose rows a create
-- writes cost every create (and every update that is not HOT); the
-- partial ones cost only the writes that enter them. BENCHMARKS.md has the
-- measured costs.
-- CREATE INDEX blocks writes while it builds: on a large table, expect the
-- upgrade to take a while (about 10 s a million tasks, on a small machine).

-- The task's history: a JSON array of events (claims, status messages,
-- input requests and answers, the end), bounded in length; NULL when
-- empty. jsonb, not json: the store appends to it in SQL (claims) and
-- never promises its bytes. Not indexed, so writes that only append to it
-- stay HOT.
ALTER TABLE mcptasks_tasks ADD COLUMN history jsonb;

-- Every task, newest first: the unfiltered list, the CreatedAfter and
-- CreatedBefore bounds, searches by text or id, and tasks created per
-- minute. Written by every create.
CREATE INDEX mcptasks_tasks_created ON mcptasks_tasks (created_at, id) INCLUDE (tool, expires_at);

-- One principal's tasks, newest first: tasks/list, and the console's
-- principal filter. Written by every create.
CREATE INDEX mcptasks_tasks_principal ON mcptasks_tasks (principal, created_at, id)
    INCLUDE (status, tool, expires_at);

-- Tasks by status, newest first, and their counts; working tasks are left
-- out (creates do not write it), and the claim index serves them.
CREATE INDEX mcptasks_tasks_status ON mcptasks_tasks (status, created_at, id)
    INCLUDE (tool, expires_at) WHERE status <> 'working';

-- Finished tasks by the time they ended, with what the counts need:
-- tasks finished per minute, and by status and tool in a recent window.
CREATE INDEX mcptasks_tasks_finished ON mcptasks_tasks (updated_at) INCLUDE (status, tool)
    WHERE status IN ('completed', 'failed', 'cancelled');
