// Package postgres is the Store for replicas that share one PostgreSQL database: SKIP LOCKED claims and LISTEN/NOTIFY wake-ups, on pgx/v5.
//
// Each task is one row of the table mcptasks_tasks, in the first schema of
// the connection's search_path. [Open] creates or upgrades the schema with
// the embedded migrations, under an advisory lock, so that any number of
// replicas may start at once.
//
// Claim and HeartbeatMany are single statements: a claim locks the oldest
// claimable rows with FOR UPDATE SKIP LOCKED, so concurrent workers never
// wait for each other or take the same task, and leases them in the same
// statement. Get is one primary-key read. The other writes lock the row
// (SELECT … FOR UPDATE), apply the shared state-machine rules of package
// store and write the row back, in one transaction.
//
// # Durability
//
// A write that returned nil has been committed. It is on disk when the
// server runs with synchronous_commit on (the default) and fsync on; with
// synchronous replicas configured, it is also where synchronous_commit says.
// When a commit fails on the network, the write may or may not have
// happened, as with any database client.
//
// # Timeouts
//
// Every call honours its ctx. A call whose ctx has no deadline gets
// [Options.QueryTimeout], so that a database that does not answer makes
// calls fail with an error instead of hanging them. The server ends any
// statement that runs longer than [Options.StatementTimeout].
//
// # Events
//
// Store implements [store.Listener]: a Create of a claimable task (working,
// unleased), an Answer that accepted keys, and a Release, SetStatusMessage,
// RequestInput, Finish or RequestCancel that changed the task each send a
// NOTIFY in the same transaction, and [Store.Listen] delivers them to every
// process. A Create of a task that is already claimed or not working sends
// none, nor do claims, heartbeats, steps and the deletion of expired tasks.
// Notifying commits are serialized by Postgres; [Options.DisableNotify]
// trades the events for write throughput.
//
// # Values
//
// Times come back in UTC, at millisecond precision; durations in whole
// milliseconds. JSON values are kept byte for byte in json columns (not
// jsonb, which rewrites them), so they must be valid JSON: a write of an
// invalid value fails. The values of InputRequests and Answers, and
// Error.Data, are kept inside a JSON object: whitespace around them is
// dropped and a nil value comes back as null.
package postgres
