-- The results of the task's durable steps (engine.Run.Step): a JSON object
-- of step name to result JSON, kept byte for byte (json, not jsonb); NULL
-- when none. Bounded by task.MaxStepBytes each and task.MaxStepsBytes in
-- all. A nullable column without a default is added without rewriting the
-- table; it is in no index, so a step's write can stay a HOT update.
ALTER TABLE mcptasks_tasks ADD COLUMN steps json;
