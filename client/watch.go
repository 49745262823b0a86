package client

import (
	"container/heap"
	"context"
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
// the arguments. It behaves like [Task.Wait] for each task, but polls them
// all from one scheduling loop (a min-heap of next poll times) with at
// most Options.MaxInFlight requests in flight, instead of a goroutine per
// task. If ctx ends first, the tasks still running get ctx's error.
func (c *Client) WaitAll(ctx context.Context, tasks ...*Task) []Outcome {
	out := make([]Outcome, len(tasks))
	c.watch(ctx, tasks, func(o Outcome) { out[o.Index] = o })
	return out
}

// Watch is [Client.WaitAll] delivering each outcome as it happens. The
// channel has room for every outcome, so the loop never waits for the
// reader, and is closed after the last one.
func (c *Client) Watch(ctx context.Context, tasks ...*Task) <-chan Outcome {
	ch := make(chan Outcome, len(tasks))
	go func() {
		defer close(ch)
		c.watch(ctx, tasks, func(o Outcome) { ch <- o })
	}()
	return ch
}

// watchItem is one task in the scheduling loop.
type watchItem struct {
	index int
	task  *Task
	next  time.Time
	out   stepOutcome
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
// MaxInFlight workers that each run one polling round (tasks/get, and any
// input handling) and hand the item back.
func (c *Client) watch(ctx context.Context, tasks []*Task, deliver func(Outcome)) {
	if len(tasks) == 0 {
		return
	}
	workers := min(c.opts.MaxInFlight, len(tasks))
	jobs := make(chan *watchItem)
	results := make(chan *watchItem, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range jobs {
				it.out = it.task.step(ctx)
				results <- it
			}
		}()
	}
	defer func() {
		close(jobs)
		wg.Wait()
	}()

	h := make(pollHeap, 0, len(tasks))
	start := time.Now()
	for i, t := range tasks {
		h = append(h, &watchItem{index: i, task: t, next: start.Add(t.firstDelay(start))})
	}
	heap.Init(&h)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	inFlight, remaining := 0, len(tasks)
	finish := func(it *watchItem, err error) {
		remaining--
		if err == nil {
			err = it.out.err
		}
		deliver(Outcome{Index: it.index, Task: it.task, Result: it.out.result, Err: err})
	}
	for remaining > 0 {
		for inFlight < workers && h.Len() > 0 && !h[0].next.After(time.Now()) {
			jobs <- heap.Pop(&h).(*watchItem)
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
			if it.out.done {
				finish(it, nil)
				continue
			}
			it.next = time.Now().Add(it.out.next)
			heap.Push(&h, it)
		case <-due:
		}
	}
}
