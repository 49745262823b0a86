-- The W3C traceparent of the span that created the task, for the worker's
-- span to continue its trace; '' when tracing was off.
ALTER TABLE tasks ADD COLUMN trace_parent TEXT NOT NULL DEFAULT '';
