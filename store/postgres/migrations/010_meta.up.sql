-- What the task keeps of its request's _meta (task.Record.Meta): a JSON
-- object, kept byte for byte (json, not jsonb); NULL when the request sent
-- nothing more than the protocol version, the client capabilities and a
-- progress token. A nullable column without a default is added without
-- rewriting the table; it is in no index.
ALTER TABLE mcptasks_tasks ADD COLUMN meta json;
