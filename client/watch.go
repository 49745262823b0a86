package client

import (
	"container/heap"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Outcome is how one task of [Client.WaitAll] or [Client.Watch] ended:
// as [Task.Wait] would have returned.
type Outcome struct {
	// Index is the task's position in the arguments.
	Index  int
	Task   *Task
	Result *mcp.CallToolResult
	Err    error
}

// WaitAll waits for every task and returns their outcomes in the order of
// the arguments. It behaves like [Task.Wait] for each task (opts apply to
// all of them), but waits for them all from one scheduling loop (a
// min-heap of next poll times) with at most Options.MaxInFlight requests
// in flight, instead of a goroutine per task, and with one
// subscriptions/listen for all of them when the server offers
// notifications/tasks. If ctx ends first, the tasks still running get
// ctx's error.
func (c *Client) WaitAll(ctx context.Context, tasks []*Task, opts ...WaitOption) []Outcome {
	out := make([]Outcome, len(tasks))
	c.watch(ctx, tasks, newWaitConfig(opts), func(o Outcome) { out[o.Index] = o })
	return out
}

// Watch is [Client.WaitAll] delivering each outcome as it happens. The
// channel has room for every outcome, so the loop never waits for the
// reader, and is closed after the last one.
func (c *Client) Watch(ctx context.Context, tasks []*Task, opts ...WaitOption) <-chan Outcome {
	ch := make(chan Outcome, len(tasks))
	w := newWaitConfig(opts)
	go func() {
		defer close(ch)
		c.watch(ctx, tasks, w, func(o Outcome) { ch <- o })
	}()
	return ch
}

// watchItem is one task in the scheduling loop.
type watchItem struct {
	index    int
	task     *Task
	next     time.Time
	inFlight bool
	// pushed is the latest status a notification brought and no round
	// has taken yet; a round takes it instead of reading tasks/get.
	pushed *TaskStatus
	// job is the status the running round was given (nil: it polls).
	job *TaskStatus
	// reread asks for a round as soon as the running one ends: the
	// subscription began while it ran.
	reread bool
	// failed is the run of rounds that failed, touched only by the round
	// that has the item.
	failed failureRun
	out    stepOutcome
}

type pollHeap []*watchItem

func (h pollHeap) Len() int           { return len(h) }
func (h pollHeap) Less(i, j int) bool { return h[i].next.Before(h[j].next) }
func (h pollHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *pollHeap) Push(x any)        { *h = append(*h, x.(*watchItem)) }
func (h *pollHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return it
}

// watch runs the scheduling loop: due tasks go to a fixed pool of
// MaxInFlight workers that each run one round (a pushed status, or
// tasks/get, then any input handling) and hand the item back. Unless w
// says PollOnly, a subscription (see listen) pushes statuses: while it
// lasts, the tasks it acknowledged are read with tasks/get once, then only
// every Options.ListenBackstop; when it ends, every task is polled again
// at once and then as its pollIntervalMs says.
func (c *Client) watch(ctx context.Context, tasks []*Task, w *waitConfig, deliver func(Outcome)) {
	if len(tasks) == 0 {
		return
	}
	for _, t := range tasks {
		w.report(t.Last())
	}
	workers := min(c.opts.MaxInFlight, len(tasks))
	jobs := make(chan *watchItem)
	results := make(chan *watchItem, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for it := range jobs {
				it.out = it.task.step(ctx, w, it.job, &it.failed)
				results <- it
			}
		})
	}
	defer func() {
		close(jobs)
		wg.Wait()
	}()

	h := make(pollHeap, 0, len(tasks))
	byID := make(map[string]*watchItem, len(tasks))
	start := time.Now()
	for i, t := range tasks {
		it := &watchItem{index: i, task: t, next: start.Add(t.firstDelay(start))}
		byID[t.ID] = it
		h = append(h, it)
	}
	heap.Init(&h)

	// The subscription, when it may be offered: a 2026-07-28 server.
	var events chan pushEvent
	subscribed := map[string]bool{} // tasks the acknowledgement listed
	if !w.pollOnly && !c.noPush.Load() {
		if leg, err := c.protocol(ctx); err == nil && leg == nil {
			events = make(chan pushEvent)
			lctx, stop := context.WithCancel(ctx)
			ids := make([]string, 0, len(byID))
			for id := range byID {
				ids = append(ids, id)
			}
			var lwg sync.WaitGroup
			lwg.Go(func() { c.listen(lctx, sortedIDs(ids), events) })
			defer func() {
				stop()
				lwg.Wait()
			}()
		}
	}

	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	inFlight, remaining := 0, len(tasks)
	finish := func(it *watchItem, err error) {
		remaining--
		delete(byID, it.task.ID)
		if err == nil {
			err = it.out.err
		}
		deliver(Outcome{Index: it.index, Task: it.task, Result: it.out.result, Err: err})
	}
	for remaining > 0 {
		for inFlight < workers && h.Len() > 0 && !h[0].next.After(time.Now()) {
			it := heap.Pop(&h).(*watchItem)
			it.job, it.pushed, it.inFlight = it.pushed, nil, true
			jobs <- it
			inFlight++
		}
		var due <-chan time.Time
		if inFlight < workers && h.Len() > 0 {
			timer.Reset(time.Until(h[0].next))
			due = timer.C
		}
		select {
		case <-ctx.Done():
			for ; inFlight > 0; inFlight-- {
				it := <-results
				if it.out.done {
					finish(it, nil)
				} else {
					finish(it, ctx.Err())
				}
			}
			for h.Len() > 0 {
				finish(heap.Pop(&h).(*watchItem), ctx.Err())
			}
			return
		case it := <-results:
			inFlight--
			it.inFlight = false
			if it.out.done {
				finish(it, nil)
				continue
			}
			it.next = time.Now().Add(it.out.next)
			if subscribed[it.task.ID] && it.out.err == nil {
				it.next = time.Now().Add(max(it.out.next, c.opts.ListenBackstop))
			}
			if it.pushed != nil || it.reread {
				it.next, it.reread = time.Now(), false
			}
			heap.Push(&h, it)
		case e := <-events:
			now := time.Now()
			switch {
			case e.ack:
				c.log.Debug("subscribed to task notifications", "tasks", len(e.acked))
				// Read each acknowledged task once: it may have changed
				// before the subscription began.
				for _, id := range e.acked {
					if it := byID[id]; it != nil {
						subscribed[id] = true
						it.next, it.reread = now, it.inFlight
					}
				}
			case e.detailed != nil:
				it := byID[e.detailed.TaskID]
				if it == nil {
					continue
				}
				st, err := it.task.detailed(methodTaskChanged, e.detailed)
				if err != nil {
					c.log.Warn("ignoring a notifications/tasks", "task", it.task.ID, "err", err)
					continue
				}
				// Reported now, not when a round takes it: a later
				// notification may replace it before then.
				w.report(st)
				it.pushed, it.next = st, now
			case e.ended:
				events = nil
				if len(subscribed) > 0 {
					c.log.Info("task notifications ended; polling", "err", e.err)
				} else {
					c.log.Debug("task notifications not offered; polling", "err", e.err)
				}
				for id := range subscribed {
					if it := byID[id]; it != nil {
						it.next, it.reread = now, it.inFlight
					}
				}
				clear(subscribed)
			}
			heap.Init(&h)
		case <-due:
		}
	}
}

func sortedIDs(ids []string) []string {
	slices.Sort(ids)
	return ids
}
