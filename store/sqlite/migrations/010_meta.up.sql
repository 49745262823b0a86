-- What the task keeps of its request's _meta (task.Record.Meta): a JSON
-- object, kept byte for byte; NULL when the request sent nothing more than
-- the protocol version, the client capabilities and a progress token. Not
-- indexed.
ALTER TABLE tasks ADD COLUMN meta TEXT;
