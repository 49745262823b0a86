package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// Observer receives what the engine does, for metrics. Its methods must be
// fast and safe for concurrent use.
type Observer interface {
	// StoreOp reports one store call: its name (create, get, claim, …),
	// how long it took and its error.
	StoreOp(op string, d time.Duration, err error)
	// TaskCreated reports a task created by this engine.
	TaskCreated(tool string)
	// TaskClaimed reports a claim: wait is the time since the task was
	// created (the claim latency of a first attempt), lost whether its
	// previous worker was lost.
	TaskClaimed(tool string, wait time.Duration, lost bool)
	// TaskFinished reports a terminal status written by this engine.
	TaskFinished(tool string, status task.Status)
}

type nopObserver struct{}

func (nopObserver) StoreOp(string, time.Duration, error)    {}
func (nopObserver) TaskCreated(string)                      {}
func (nopObserver) TaskClaimed(string, time.Duration, bool) {}
func (nopObserver) TaskFinished(string, task.Status)        {}

// observed times every call of a store and reports it to an Observer.
type observed struct {
	st  store.Store
	obs Observer
}

func (o observed) done(op string, start time.Time, err error) {
	o.obs.StoreOp(op, time.Since(start), err)
}

func (o observed) Create(ctx context.Context, r *task.Record) (err error) {
	defer func(t time.Time) { o.done("create", t, err) }(time.Now())
	return o.st.Create(ctx, r)
}

func (o observed) Get(ctx context.Context, id string) (_ *task.Record, err error) {
	defer func(t time.Time) { o.done("get", t, err) }(time.Now())
	return o.st.Get(ctx, id)
}

func (o observed) GetFor(ctx context.Context, id, principal string) (_ *task.Record, err error) {
	defer func(t time.Time) { o.done("get", t, err) }(time.Now())
	return o.st.GetFor(ctx, id, principal)
}

func (o observed) Claim(ctx context.Context, p store.ClaimParams) (_ []store.Claimed, err error) {
	defer func(t time.Time) { o.done("claim", t, err) }(time.Now())
	return o.st.Claim(ctx, p)
}

func (o observed) HeartbeatMany(ctx context.Context, p store.HeartbeatManyParams) (_ []store.LeaseState, err error) {
	defer func(t time.Time) { o.done("heartbeat", t, err) }(time.Now())
	return o.st.HeartbeatMany(ctx, p)
}

func (o observed) Release(ctx context.Context, p store.FenceParams) (err error) {
	defer func(t time.Time) { o.done("release", t, err) }(time.Now())
	return o.st.Release(ctx, p)
}

func (o observed) SetStatusMessage(ctx context.Context, p store.StatusMessageParams) (err error) {
	defer func(t time.Time) { o.done("set_status", t, err) }(time.Now())
	return o.st.SetStatusMessage(ctx, p)
}

func (o observed) RequestInput(ctx context.Context, p store.RequestInputParams) (_ map[string]json.RawMessage, err error) {
	defer func(t time.Time) { o.done("request_input", t, err) }(time.Now())
	return o.st.RequestInput(ctx, p)
}

func (o observed) SaveStep(ctx context.Context, p store.StepParams) (_ json.RawMessage, err error) {
	defer func(t time.Time) { o.done("save_step", t, err) }(time.Now())
	return o.st.SaveStep(ctx, p)
}

func (o observed) Finish(ctx context.Context, p store.FinishParams) (err error) {
	defer func(t time.Time) { o.done("finish", t, err) }(time.Now())
	return o.st.Finish(ctx, p)
}

func (o observed) Answer(ctx context.Context, p store.AnswerParams) (_ []string, err error) {
	defer func(t time.Time) { o.done("answer", t, err) }(time.Now())
	return o.st.Answer(ctx, p)
}

func (o observed) RequestCancel(ctx context.Context, p store.CancelParams) (_ *task.Record, err error) {
	defer func(t time.Time) { o.done("cancel", t, err) }(time.Now())
	return o.st.RequestCancel(ctx, p)
}

func (o observed) DeleteExpired(ctx context.Context, now time.Time, limit int) (_ int, err error) {
	defer func(t time.Time) { o.done("delete_expired", t, err) }(time.Now())
	return o.st.DeleteExpired(ctx, now, limit)
}

func (o observed) Close() error { return o.st.Close() }
