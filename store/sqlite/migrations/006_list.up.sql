-- Listing, searching and counting tasks (store.Lister: the operator console
-- and tasks/list), and the history of each task.
--
-- Every list query walks one index newest first: (created_at, id) is the
-- order and the keyset of pages. The columns after it let the filters
-- that the index does not order by be checked in the index, without
-- reading the row (status and tool; ttl_ms for tasks/list, which leaves
-- expired tasks out: SQLite reads a generated column such as expires_at
-- from the row, never from an index): only the text search reads rows. Indexes
-- whose rows a create writes cost every create; the others are partial
-- and cost only the writes that enter them. BENCHMARKS.md has the
-- measured costs.

-- The task's history: a JSON array of events (claims, status messages,
-- input requests and answers, the end), bounded in length. NULL when empty.
ALTER TABLE tasks ADD COLUMN history TEXT;

-- Every task, newest first: the unfiltered list, the CreatedAfter and
-- CreatedBefore bounds, searches by text or id, and tasks created per
-- minute. Written by every create.
CREATE INDEX tasks_created ON tasks (created_at, id, tool, ttl_ms);

-- One principal's tasks, newest first: tasks/list, and the console's
-- principal filter. Written by every create, and by each change of status.
CREATE INDEX tasks_principal ON tasks (principal, created_at, id, status, tool, ttl_ms);

-- Tasks by status, newest first, and their counts; working tasks are left
-- out (creates do not write it), and the claim index serves them.
CREATE INDEX tasks_status ON tasks (status, created_at, id, tool, ttl_ms)
    WHERE status <> 'working';

-- Finished tasks by the time they ended, with what the counts need:
-- tasks finished per minute, and by status and tool in a recent window.
CREATE INDEX tasks_finished ON tasks (updated_at, status, tool)
    WHERE status IN ('completed', 'failed', 'cancelled');
