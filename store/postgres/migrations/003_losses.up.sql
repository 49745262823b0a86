-- How many claims found the task's previous lease expired while held (runs
-- lost with their worker); graceful releases do not count. The retry
-- policy's MaxAttempts is checked against it. A column with a constant
-- default is added without rewriting the table.
ALTER TABLE mcptasks_tasks ADD COLUMN losses integer NOT NULL DEFAULT 0;
