package engine

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcptasks/mcptasks/task"
)

func TestCreate(t *testing.T) {
	tests := []struct {
		name               string
		opts               Options
		toolTTL, toolPoll  time.Duration
		wantTTL, wantPoll  time.Duration
		wantTTLMs, wantPMs any // as decoded from the wire JSON
	}{
		{
			name:    "engine defaults",
			wantTTL: DefaultTTL, wantPoll: DefaultPollInterval,
			wantTTLMs: float64(3_600_000), wantPMs: float64(1000),
		},
		{
			name:    "options defaults",
			opts:    Options{DefaultTTL: 10 * time.Minute, DefaultPollInterval: 5 * time.Second},
			wantTTL: 10 * time.Minute, wantPoll: 5 * time.Second,
			wantTTLMs: float64(600_000), wantPMs: float64(5000),
		},
		{
			name:    "tool overrides options",
			opts:    Options{DefaultTTL: 10 * time.Minute, DefaultPollInterval: 5 * time.Second},
			toolTTL: 2 * time.Minute, toolPoll: 250 * time.Millisecond,
			wantTTL: 2 * time.Minute, wantPoll: 250 * time.Millisecond,
			wantTTLMs: float64(120_000), wantPMs: float64(250),
		},
		{
			name:    "negative tool TTL means no limit",
			toolTTL: -1,
			wantTTL: 0, wantPoll: DefaultPollInterval,
			wantTTLMs: nil, wantPMs: float64(1000),
		},
		{
			name:    "negative default TTL means no limit",
			opts:    Options{DefaultTTL: -time.Hour},
			wantTTL: 0, wantPoll: DefaultPollInterval,
			wantTTLMs: nil, wantPMs: float64(1000),
		},
		{
			name:    "tool TTL beats a no-limit default",
			opts:    Options{DefaultTTL: -1},
			toolTTL: 5 * time.Minute,
			wantTTL: 5 * time.Minute, wantPoll: DefaultPollInterval,
			wantTTLMs: float64(300_000), wantPMs: float64(1000),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				st := newMem()
				tool := &Tool{Name: "slow", TTL: tt.toolTTL, PollInterval: tt.toolPoll, Handler: blockUntilCancelled}
				// Not started: the task stays queued, so what we read is
				// what Create wrote.
				e := newEngine(t, st, []*Tool{tool}, tt.opts)
				replica := newEngine(t, st, []*Tool{tool}, Options{Owner: "b"})

				args := json.RawMessage(`{"n":1}`)
				caps := json.RawMessage(`{"elicitation":{}}`)
				r, err := e.Create(bg, CreateParams{Tool: "slow", Args: args, Principal: principal, ClientCapabilities: caps})
				if err != nil {
					t.Fatalf("Create: %v", err)
				}
				if !task.ValidID(r.ID) {
					t.Errorf("id %q is not a valid task id", r.ID)
				}

				// Durable before reply: the store has it, and so does every
				// replica, as soon as Create returns.
				got := get(t, st, r.ID)
				if _, err := replica.Get(bg, principal, r.ID); err != nil {
					t.Errorf("Get on another engine right after Create: %v", err)
				}
				now := time.Now()
				if got.Status != task.Working || got.Principal != principal || got.Tool != "slow" ||
					string(got.Args) != string(args) || string(got.ClientCapabilities) != string(caps) ||
					!got.CreatedAt.Equal(now) || !got.UpdatedAt.Equal(now) ||
					got.Attempt != 0 || got.LeaseOwner != "" {
					t.Errorf("stored record = %+v", got)
				}
				if got.TTL != tt.wantTTL || got.PollInterval != tt.wantPoll {
					t.Errorf("TTL, PollInterval = %v, %v; want %v, %v", got.TTL, got.PollInterval, tt.wantTTL, tt.wantPoll)
				}

				// The wire form: ttlMs is always present, null for no limit.
				b, err := json.Marshal(r.CreateResult())
				if err != nil {
					t.Fatal(err)
				}
				var m map[string]any
				if err := json.Unmarshal(b, &m); err != nil {
					t.Fatal(err)
				}
				ttl, ok := m["ttlMs"]
				if !ok {
					t.Errorf("CreateTaskResult %s has no ttlMs", b)
				}
				if ttl != tt.wantTTLMs || m["pollIntervalMs"] != tt.wantPMs {
					t.Errorf("CreateTaskResult %s: ttlMs = %v, pollIntervalMs = %v; want %v, %v", b, ttl, m["pollIntervalMs"], tt.wantTTLMs, tt.wantPMs)
				}
				if m["resultType"] != "task" || m["status"] != "working" || m["taskId"] != r.ID {
					t.Errorf("CreateTaskResult = %s", b)
				}
			})
		})
	}
}

func TestCreateUnknownTool(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEngine(t, newMem(), []*Tool{{Name: "known", Handler: returns(`{}`)}}, Options{})
		_, err := e.Create(bg, CreateParams{Tool: "unknown", Principal: principal})
		if !errors.Is(err, ErrUnknownTool) {
			t.Errorf("Create(unknown) error = %v, want ErrUnknownTool", err)
		}
	})
}

func TestNewRejectsBadTools(t *testing.T) {
	h := returns(`{}`)
	tests := []struct {
		name  string
		tools []*Tool
	}{
		{"nil tool", []*Tool{nil}},
		{"no name", []*Tool{{Handler: h}}},
		{"no handler", []*Tool{{Name: "x"}}},
		{"duplicate", []*Tool{{Name: "x", Handler: h}, {Name: "x", Handler: h}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(newMem(), tt.tools, nil); err == nil {
				t.Error("New succeeded, want an error")
			}
		})
	}
}

// TestCreate_LostReply reproduces a create whose commit succeeded but
// whose reply was lost (a connection reset after the commit), and that the
// engine could not find stored before giving up: a retry without an
// idempotency key makes a second task; with one, the retry gets the task
// the first attempt made.
func TestCreate_LostReply(t *testing.T) {
	for _, tt := range []struct {
		name      string
		key       string
		wantTasks int
	}{
		{"WithoutKey", "", 2},
		{"WithKey", "retry-1", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				mem := newMem()
				st := &faultStore{Store: mem}
				e := newEngine(t, st, []*Tool{{Name: "slow", Handler: blockUntilCancelled}}, Options{})
				p := CreateParams{Tool: "slow", Args: json.RawMessage(`{"n":1}`), Principal: principal, IdempotencyKey: tt.key}
				st.loseCreate.Store(1)
				st.blipGet.Store(1 << 20) // and the engine cannot find it: the store stays away
				if _, err := e.Create(bg, p); err == nil {
					t.Fatal("the first Create succeeded; the fault store should have lost its reply")
				}
				st.blipGet.Store(0)
				r, err := e.Create(bg, p) // the client's retry
				if err != nil {
					t.Fatalf("retried Create: %v", err)
				}
				if n := count(t, mem); n != tt.wantTasks {
					t.Errorf("%d tasks after a lost reply and a retry, want %d", n, tt.wantTasks)
				}
				if _, err := e.Get(bg, principal, r.ID); err != nil {
					t.Errorf("Get(the retry's task): %v", err)
				}
			})
		})
	}
}

// TestCreate_IdempotencyKey checks what a second create with a key gets:
// the same task for the same call, ErrKeyReused for another call, a new
// task for another principal, another key, or after the first task's TTL.
func TestCreate_IdempotencyKey(t *testing.T) {
	first := CreateParams{Tool: "slow", Args: json.RawMessage(`{"n":1,"s":"a"}`), Principal: principal, IdempotencyKey: "k"}
	tests := []struct {
		name    string
		after   time.Duration // between the two creates
		second  func(p CreateParams) CreateParams
		same    bool  // the second create returns the first task
		wantErr error // or fails so
	}{
		{"SameCall", 0, func(p CreateParams) CreateParams { return p }, true, nil},
		{"SameValueOtherSpelling", 0, func(p CreateParams) CreateParams {
			p.Args = json.RawMessage(` { "s" : "a", "n" : 1 } `)
			return p
		}, true, nil},
		{"LaterInTTL", DefaultTTL - time.Millisecond, func(p CreateParams) CreateParams { return p }, true, nil},
		{"OtherArgs", 0, func(p CreateParams) CreateParams { p.Args = json.RawMessage(`{"n":2,"s":"a"}`); return p }, false, ErrKeyReused},
		{"OtherTool", 0, func(p CreateParams) CreateParams { p.Tool = "other"; return p }, false, ErrKeyReused},
		{"OtherPrincipal", 0, func(p CreateParams) CreateParams { p.Principal = "bob"; return p }, false, nil},
		{"OtherKey", 0, func(p CreateParams) CreateParams { p.IdempotencyKey = "k2"; return p }, false, nil},
		{"NoKey", 0, func(p CreateParams) CreateParams { p.IdempotencyKey = ""; return p }, false, nil},
		{"AfterTTL", DefaultTTL, func(p CreateParams) CreateParams { return p }, false, nil},
		{"TooLong", 0, func(p CreateParams) CreateParams {
			p.IdempotencyKey = strings.Repeat("k", MaxIdempotencyKeyLen+1)
			return p
		}, false, ErrInvalidKey},
		{"NotPrintable", 0, func(p CreateParams) CreateParams { p.IdempotencyKey = "k\n"; return p }, false, ErrInvalidKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				tools := []*Tool{{Name: "slow", Handler: blockUntilCancelled}, {Name: "other", Handler: blockUntilCancelled}}
				e := newEngine(t, newMem(), tools, Options{})
				a, err := e.Create(bg, first)
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(tt.after)
				b, err := e.Create(bg, tt.second(first))
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("second Create: error = %v, want %v", err, tt.wantErr)
				}
				if err != nil {
					return
				}
				if got := b.ID == a.ID; got != tt.same {
					t.Errorf("second Create returned the first task: %v, want %v", got, tt.same)
				}
				if tt.same {
					ja, _ := json.Marshal(a.CreateResult())
					jb, _ := json.Marshal(b.CreateResult())
					if string(ja) != string(jb) {
						t.Errorf("the replayed CreateTaskResult differs:\n first %s\nsecond %s", ja, jb)
					}
				}
			})
		})
	}
}
