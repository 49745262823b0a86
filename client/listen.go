package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"time"

	"github.com/mcptasks/mcptasks/task"
)

// Methods and keys of task notifications (TASKS-SPEC §2.10, §3.12).
const (
	methodListen          = "subscriptions/listen"
	methodAcknowledged    = "notifications/subscriptions/acknowledged"
	methodTaskChanged     = "notifications/tasks"
	metaSubscriptionID    = "io.modelcontextprotocol/subscriptionId"
	defaultListenAckAfter = 30 * time.Second
)

// errNotOffered says that the server acknowledged a subscription without
// the task ids asked for: it does not push task notifications (to us).
var errNotOffered = errors.New("the server does not offer notifications/tasks")

// pushEvent is what a subscription delivers to a wait: its
// acknowledgement, a notifications/tasks, or its end.
type pushEvent struct {
	// acked are the task ids the acknowledgement lists; ack is set for it.
	ack   bool
	acked []string
	// detailed is a notifications/tasks, the task as tasks/get shows it.
	detailed *task.Detailed
	// ended is set by the last event: the subscription is over, after
	// the server's response (err nil) or not (err says why).
	ended bool
	err   error
}

// listen subscribes to the notifications/tasks of ids (subscriptions/listen)
// and sends what arrives to events until the stream ends or ctx is done.
// The last event it sends (unless ctx is done first) has ended set. An
// acknowledgement that lists none of ids ends the subscription with
// errNotOffered, as does one that does not come within
// Options.RequestTimeout (30 s if zero). A server without
// subscriptions/listen (-32601), or whose acknowledgement has no taskIds
// field (it does not know the Tasks extension's filter), is not asked
// again by this client.
func (c *Client) listen(ctx context.Context, ids []string, events chan<- pushEvent) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	send := func(e pushEvent) bool {
		select {
		case events <- e:
			return true
		case <-ctx.Done():
			return false
		}
	}
	err := c.subscribe(ctx, cancel, ids, send)
	send(pushEvent{ended: true, err: err})
}

// subscribe runs one subscriptions/listen request; see listen.
func (c *Client) subscribe(ctx context.Context, cancel context.CancelFunc, ids []string, send func(pushEvent) bool) error {
	k, err := newCall(methodListen, map[string]any{"notifications": map[string]any{"taskIds": ids}})
	if err != nil {
		return err
	}
	id := c.nextID.Add(1)
	body, err := c.encodeRequest(id, k)
	if err != nil {
		return err
	}
	h := http.Header{}
	h.Set(headerProtocolVersion, ProtocolVersion)
	h.Set(headerMethod, EncodeHeaderValue(methodListen))
	acked := make(chan struct{})
	ackTimer := time.AfterFunc(cmp.Or(c.opts.RequestTimeout, defaultListenAckAfter), func() {
		select {
		case <-acked:
		default:
			cancel()
		}
	})
	defer ackTimer.Stop()
	resp, err := c.roundTripHTTP(ctx, http.MethodPost, methodListen, body, h)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		// A JSON reply: an error (method not found, -32021, …), or a
		// result without any notification.
		msg, err := c.readReply(resp, id, methodListen, nil)
		if err != nil {
			return err
		}
		if msg.Error != nil {
			if msg.Error.Code == CodeMethodNotFound {
				c.noPush.Store(true) // no later wait of this client asks again
			}
			return &Error{Code: msg.Error.Code, Message: msg.Error.Message, Data: msg.Error.Data, HTTPStatus: resp.StatusCode, Method: methodListen}
		}
		return errNotOffered
	}
	var stop error // why the subscription ends early
	onNote := func(method string, params json.RawMessage) {
		if stop != nil {
			return
		}
		var p struct {
			Meta          map[string]json.RawMessage `json:"_meta"`
			Notifications struct {
				TaskIDs *[]string `json:"taskIds"`
			} `json:"notifications"`
		}
		_ = json.Unmarshal(params, &p)
		if sub, ok := p.Meta[metaSubscriptionID]; !ok || !sameID(sub, id) {
			c.log.Warn("ignoring a notification of another subscription", "method", method, "subscription", string(sub))
			return
		}
		switch method {
		case methodAcknowledged:
			select {
			case <-acked:
				c.log.Warn("ignoring a second acknowledgement of a subscription")
				return
			default:
				close(acked)
			}
			if p.Notifications.TaskIDs == nil {
				// The server does not know the filter at all: no
				// later wait of this client asks again.
				c.noPush.Store(true)
			}
			if p.Notifications.TaskIDs == nil || len(*p.Notifications.TaskIDs) == 0 {
				stop = errNotOffered
				cancel()
				return
			}
			if !send(pushEvent{ack: true, acked: *p.Notifications.TaskIDs}) {
				stop = ctx.Err()
			}
		case methodTaskChanged:
			var d task.Detailed
			if err := json.Unmarshal(params, &d); err != nil {
				c.log.Warn("ignoring a notifications/tasks that does not decode", "err", err)
				return
			}
			if !send(pushEvent{detailed: &d}) {
				stop = ctx.Err()
			}
		default:
			c.log.Debug("ignoring a notification on a subscription", "method", method)
		}
	}
	msg, err := c.readSSE(resp.Body, id, methodListen, nil, onNote)
	switch {
	case stop != nil:
		return stop
	case err != nil:
		return err
	case msg.Error != nil:
		return &Error{Code: msg.Error.Code, Message: msg.Error.Message, Data: msg.Error.Data, HTTPStatus: resp.StatusCode, Method: methodListen}
	}
	select {
	case <-acked:
		return nil // the server ended the subscription
	default:
		return fmt.Errorf("%s: %w: a response before the acknowledgement", methodListen, ErrInvalidResult)
	}
}
