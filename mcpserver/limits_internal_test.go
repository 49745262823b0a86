package mcpserver

import (
	"fmt"
	"strings"
	"testing"
)

// TestJSONMembersOver counts the top level only, whatever is nested or
// quoted.
func TestJSONMembersOver(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		over bool
	}{
		{`[]`, 1, false},
		{`[1]`, 1, false},
		{`[1,2]`, 1, true},
		{`[1,2,3]`, 3, false},
		{`[[1,2,3],{"a":1,"b":2}]`, 2, false},
		{`{"a":1,"b":2,"c":3}`, 2, true},
		{`{"a":"x,y,z"}`, 1, false},
		{`{"a":[1,2],"b":{"c":[3,4]}}`, 2, false},
	} {
		if got := jsonMembersOver([]byte(c.in), c.max); got != c.over {
			t.Errorf("jsonMembersOver(%s, %d) = %v, want %v", c.in, c.max, got, c.over)
		}
	}
}

// TestListenTaskIDs_RefusedEarly: an array of far more ids than a
// subscription may hold is refused before it is decoded, at the cost of a
// scan: not thousands of allocations.
func TestListenTaskIDs_RefusedEarly(t *testing.T) {
	parts := make([]string, 100_000)
	for i := range parts {
		parts[i] = fmt.Sprintf(`"id%d"`, i)
	}
	raw := []byte("[" + strings.Join(parts, ",") + "]")
	allocs := testing.AllocsPerRun(3, func() {
		if _, err := listenTaskIDs(raw, 1000); err == nil {
			t.Fatal("100,000 ids accepted")
		}
	})
	if allocs > 20 {
		t.Errorf("refusing 100,000 ids took %.0f allocations; want a scan's few", allocs)
	}
}
