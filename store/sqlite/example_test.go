package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mcptasks/mcptasks/store/sqlite"
	"github.com/mcptasks/mcptasks/task"
)

// Open creates the file and its schema on first use; a task committed
// there is read back after the store is closed and opened again, as a
// restarted server reads it.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "sqlite-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tasks.db")
	ctx := context.Background()

	st, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		panic(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	r := &task.Record{ID: task.NewIDAt(now), Principal: "ada", Tool: "export", Args: []byte(`{"rows":3}`),
		Status: task.Working, CreatedAt: now, UpdatedAt: now, TTL: time.Hour}
	if err := st.Create(ctx, r); err != nil { // durable once it returns
		panic(err)
	}
	if err := st.Close(); err != nil {
		panic(err)
	}

	st, err = sqlite.Open(ctx, path, nil)
	if err != nil {
		panic(err)
	}
	defer st.Close()
	got, err := st.Get(ctx, r.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(got.Tool, got.Status, string(got.Args))
	// Output:
	// export working {"rows":3}
}
