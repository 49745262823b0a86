-- The W3C traceparent of the span that created the task, for the worker's
-- span to continue its trace; '' when tracing was off. A column with a
-- constant default is added without rewriting the table.
ALTER TABLE mcptasks_tasks ADD COLUMN trace_parent text NOT NULL DEFAULT '';
