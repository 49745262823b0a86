-- The results of the task's durable steps (engine.Run.Step): a JSON object
-- of step name to result JSON, kept byte for byte; NULL when none. Bounded
-- by task.MaxStepBytes each and task.MaxStepsBytes in all. Not indexed.
ALTER TABLE tasks ADD COLUMN steps TEXT;
