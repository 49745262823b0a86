// Package sqlstore holds what the SQL store backends share: the encoding of
// JSON maps in a column, embedded numbered migrations and the bounded map
// of their read caches.
package sqlstore

import (
	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// AddCount adds to c one row of a count of the live tasks by status: n tasks
// of status, queued of them held by no worker. A status other than
// input_required counts as working.
func AddCount(c *store.ActiveCounts, status string, n, queued int) {
	if task.Status(status) == task.InputRequired {
		c.InputRequired = n
	} else {
		c.Working = n
	}
	c.Queued += queued
}
