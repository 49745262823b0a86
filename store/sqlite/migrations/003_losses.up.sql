-- How many claims found the task's previous lease expired while held (runs
-- lost with their worker); graceful releases do not count. The retry
-- policy's MaxAttempts is checked against it.
ALTER TABLE tasks ADD COLUMN losses INTEGER NOT NULL DEFAULT 0;
