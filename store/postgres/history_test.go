package postgres

import (
	"testing"

	"github.com/mcptasks/mcptasks/store/storetest"
)

// BenchmarkSetStatusMessage measures a status message write of a running
// task, whose history (once full) holds task.MaxHistory events: what the
// history costs the writes that append to it. Compare with a build
// before the history, or see BENCHMARKS.md.
func BenchmarkSetStatusMessage(b *testing.B) {
	storetest.BenchmarkStatusMessages(b, openTemp(b))
}
