package memory_test

import (
	"testing"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/store/memory"
	"github.com/mcptasks/mcptasks/store/storetest"
)

func TestStore(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store { return memory.New() })
}
