package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/task"
)

// This file is the one implementation of task subscriptions:
// subscriptions/listen with params.notifications.taskIds, answered with
// notifications/subscriptions/acknowledged and notifications/tasks on an
// SSE stream (TASKS-SPEC §2.10, §3.12; design/push.md). The fast path
// (serveListen) and go-sdk's route (the middleware) both call
// Server.listen.

// Names of task subscriptions.
const (
	methodListen       = "subscriptions/listen"
	notifyAcknowledged = "notifications/subscriptions/acknowledged"
	notifyTasks        = "notifications/tasks"
)

// DefaultListenKeepAlive is how often an idle task subscription sends an
// SSE comment, unless Options say otherwise.
const DefaultListenKeepAlive = 15 * time.Second

// listenCall is one task subscription, as both routes hand it to
// Server.listen.
type listenCall struct {
	// id is the listen request's id as sent: the subscription id.
	id        json.RawMessage
	principal string
	// ids are the requested task ids, without duplicates, in order.
	ids []string
	// w is the response writer the events go to.
	w http.ResponseWriter
}

// listenKey is the context key under which the guard hands a listenCall to
// go-sdk's route.
type listenKey struct{}

// listenTaskIDs decodes params.notifications.taskIds: distinct ids, in
// order. max bounds their number (0: no bound); an array of more than
// four times max ids, duplicates and all, is refused before it is decoded.
func listenTaskIDs(raw json.RawMessage, max int) ([]string, error) {
	if max > 0 && jsonMembersOver(raw, 4*max) {
		return nil, invalidParams("params.notifications.taskIds: at most %d task ids per subscription; split them over several subscriptions", max)
	}
	var ids []string
	if decodeJSON(raw, &ids) != nil {
		return nil, invalidParams("params.notifications.taskIds must be an array of task id strings")
	}
	seen := make(map[string]bool, len(ids))
	out := ids[:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	if max > 0 && len(out) > max {
		return nil, invalidParams("params.notifications.taskIds: at most %d task ids per subscription; split them over several subscriptions", max)
	}
	return out, nil
}

// serveListen answers a task subscription without go-sdk, on the terms of
// serveTaskMethod: the guard has checked that go-sdk would accept it up to
// dispatch.
func (s *Server) serveListen(w http.ResponseWriter, r *http.Request, c *listenCall) {
	complete, err := s.listen(r.Context(), c)
	switch {
	case err != nil && !c.started():
		writeRPCError(w, c.id, err)
	case complete:
		b, _ := encodeResponse(c.id, "result", nil, map[string]any{
			"_meta":      map[string]any{mcp.MetaKeyServerInfo: s.impl, mcp.MetaKeySubscriptionID: c.id},
			"resultType": task.ResultTypeComplete,
		})
		_ = writeSSE(c.w, b)
	}
}

// serveListenSDK serves a task subscription on go-sdk's route: go-sdk has
// checked the request and writes the final response; the events go to the
// request's response writer, which go-sdk leaves alone while its handler
// runs (it has no API to send a custom notification).
func (s *Server) serveListenSDK(ctx context.Context, c *listenCall, principal string) (mcp.Result, error) {
	c.principal = principal
	complete, err := s.listen(ctx, c)
	if err != nil {
		return nil, err
	}
	if !complete {
		return nil, ctx.Err()
	}
	var id any = json.RawMessage(c.id) // a string or an integer (the guard checked)
	if n, err := strconv.ParseInt(string(c.id), 10, 64); err == nil {
		id = n
	} else {
		var str string
		if json.Unmarshal(c.id, &str) == nil {
			id = str
		}
	}
	return &mcp.SubscriptionsListenResult{Meta: mcp.Meta{mcp.MetaKeySubscriptionID: id}}, nil
}

// started reports whether the SSE stream of c has begun.
func (c *listenCall) started() bool {
	w, ok := c.w.(*startedWriter)
	return ok && w.started
}

// startedWriter notes whether anything was written.
type startedWriter struct {
	http.ResponseWriter
	started bool
}

func (w *startedWriter) WriteHeader(code int) { w.started = true; w.ResponseWriter.WriteHeader(code) }
func (w *startedWriter) Write(b []byte) (int, error) {
	w.started = true
	return w.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *startedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// subscriptionMeta is the _meta of every message of a subscription.
type subscriptionMeta struct {
	SubscriptionID json.RawMessage `json:"io.modelcontextprotocol/subscriptionId"`
}

// ackMessage is notifications/subscriptions/acknowledged.
type ackMessage struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  struct {
		Meta          subscriptionMeta `json:"_meta"`
		Notifications struct {
			TaskIDs []string `json:"taskIds"`
		} `json:"notifications"`
	} `json:"params"`
}

// noticeMessage is notifications/tasks: a DetailedTask, as tasks/get
// returns it without resultType, and the subscription's _meta.
type noticeMessage struct {
	JSONRPC string       `json:"jsonrpc"`
	Method  string       `json:"method"`
	Params  noticeParams `json:"params"`
}

type noticeParams struct {
	Meta subscriptionMeta `json:"_meta"`
	task.Info
	InputRequests map[string]json.RawMessage `json:"inputRequests,omitempty"`
	Result        json.RawMessage            `json:"result,omitempty"`
	Error         *task.Error                `json:"error,omitempty"`
}

// listen serves the task subscription c: it acknowledges the ids the
// caller may see, then sends a notification whenever one of their tasks
// changes in a way tasks/get would show, until every one is terminal or
// gone, or the server ends its subscriptions (complete = true), or ctx is
// done. An error before the acknowledgement is the listen's JSON-RPC
// error; nothing has been written then.
func (s *Server) listen(ctx context.Context, c *listenCall) (complete bool, err error) {
	sw := &startedWriter{ResponseWriter: c.w}
	c.w = sw
	feed := s.opts.ChangeFeed
	type watch struct {
		state [sha256.Size]byte // digest of the notice of what the client last saw
	}
	watched := map[string]*watch{}
	acked := []string{}
	meta := subscriptionMeta{SubscriptionID: c.id}
	var news <-chan struct{}
	var take func() ([]string, bool)
	if feed != nil {
		// Subscribe before reading: a change after the read is news.
		sub := feed.Subscribe(c.ids)
		defer sub.Close()
		news, take = sub.C(), sub.Take
		for _, id := range c.ids {
			r, err := s.eraTask(ctx, methodListen, c.principal, id, false)
			if errors.Is(err, errTaskNotFound) {
				continue
			}
			if err != nil {
				return false, err
			}
			acked = append(acked, id)
			if !r.Status.Terminal() {
				watched[id] = &watch{state: sha256.Sum256(noticeOf(meta, r))}
			}
		}
	}
	setSSEHeaders(sw.Header())
	var ack ackMessage
	ack.JSONRPC, ack.Method = "2.0", notifyAcknowledged
	ack.Params.Meta = meta
	ack.Params.Notifications.TaskIDs = acked
	b, err := json.Marshal(&ack)
	if err != nil {
		return false, fmt.Errorf("encode the acknowledgement: %w", err)
	}
	if err := writeSSE(sw, b); err != nil {
		return false, err
	}
	keepAlive := s.opts.ListenKeepAlive
	if keepAlive <= 0 {
		keepAlive = DefaultListenKeepAlive
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	// A notice carries the task's result: it comes out of the in-flight
	// budget while it is written. One that does not fit waits, unsent,
	// for the next news or for retry, whichever comes first.
	var retry <-chan time.Time
	// notify sends a notice for each of the tasks ids (nil: every watched
	// one) that changed since the client last saw it.
	notify := func(ids []string) error {
		if ids == nil {
			ids = slices.Collect(maps.Keys(watched))
		}
		for _, id := range ids {
			wt := watched[id]
			if wt == nil {
				continue
			}
			r, err := s.eraTask(ctx, methodListen, c.principal, id, false)
			if errors.Is(err, errTaskNotFound) { // expired: dropped without a word
				delete(watched, id)
				continue
			}
			if err != nil { // read again at the next news (a resync comes while the store is down)
				continue
			}
			notice := noticeOf(meta, r)
			st := sha256.Sum256(notice) // what the client saw last, by the notice it got
			if st == wt.state {
				continue
			}
			n := int64(len(notice))
			if !s.inflight.take(n) {
				if retry == nil {
					retry = time.After(busyRetry)
				}
				continue
			}
			err = writeSSE(sw, notice)
			s.inflight.give(n)
			if err != nil {
				return err
			}
			wt.state = st
			if r.Status.Terminal() {
				delete(watched, id)
			}
		}
		return nil
	}
	for len(watched) > 0 {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-s.ending:
			return true, nil
		case <-tick.C:
			if _, err := sw.Write([]byte(": keep-alive\n\n")); err != nil {
				return false, err
			}
			if err := http.NewResponseController(sw).Flush(); err != nil {
				return false, err
			}
		case <-news:
			ids, all := take()
			if all {
				ids = nil
			}
			if err := notify(ids); err != nil {
				return false, err
			}
		case <-retry:
			retry = nil
			if err := notify(nil); err != nil {
				return false, err
			}
		}
	}
	return true, nil
}

// noticeOf returns the notifications/tasks message of r.
func noticeOf(meta subscriptionMeta, r *task.Record) []byte {
	d := r.Detailed()
	m := noticeMessage{JSONRPC: "2.0", Method: notifyTasks, Params: noticeParams{
		Meta: meta, Info: d.Info, InputRequests: d.InputRequests, Result: d.Result, Error: d.Error,
	}}
	b, _ := json.Marshal(&m)
	return b
}
