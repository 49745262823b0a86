// Package metrics exports a task server's Prometheus metrics: the engine's
// store calls and task flow, and the live tasks counted in the store.
package metrics

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcptasks/mcptasks/engine"
	"github.com/mcptasks/mcptasks/store"
	"github.com/mcptasks/mcptasks/task"
)

// Metrics is an engine.Observer that records into Prometheus collectors.
type Metrics struct {
	storeOps      *prometheus.HistogramVec
	storeErrors   *prometheus.CounterVec
	created       *prometheus.CounterVec
	claimed       *prometheus.CounterVec
	claimWait     prometheus.Histogram
	leaseExpiries *prometheus.CounterVec
	finished      *prometheus.CounterVec
}

var _ engine.Observer = (*Metrics)(nil)

// New registers the metrics with reg and returns them. If st implements
// store.Counter, the live tasks are counted at each scrape (gauges
// mcptasks_tasks{status} and mcptasks_queue_depth).
func New(reg prometheus.Registerer, st store.Store) (*Metrics, error) {
	m := &Metrics{
		storeOps: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "mcptasks_store_op_duration_seconds", Help: "Latency of store calls by operation; the count of op=\"get\" is the poll rate.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 12),
		}, []string{"op"}),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcptasks_store_op_errors_total", Help: "Store calls that failed, by operation (lost leases and unknown tasks included).",
		}, []string{"op"}),
		created: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcptasks_tasks_created_total", Help: "Tasks created, by tool.",
		}, []string{"tool"}),
		claimed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcptasks_tasks_claimed_total", Help: "Claims of tasks by this process's workers, by tool.",
		}, []string{"tool"}),
		claimWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "mcptasks_claim_latency_seconds", Help: "Time from a task's creation to its first claim.",
			Buckets: prometheus.ExponentialBuckets(0.001, 3, 12),
		}),
		leaseExpiries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcptasks_lease_expiries_total", Help: "Tasks reclaimed after their worker's lease expired (a lost worker), by tool.",
		}, []string{"tool"}),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcptasks_tasks_finished_total", Help: "Tasks ended by this process's workers, by tool and terminal status.",
		}, []string{"tool", "status"}),
	}
	cs := []prometheus.Collector{m.storeOps, m.storeErrors, m.created, m.claimed, m.claimWait, m.leaseExpiries, m.finished}
	if c, ok := st.(store.Counter); ok {
		cs = append(cs, &liveCollector{c: c, now: time.Now})
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// StoreOp implements engine.Observer.
func (m *Metrics) StoreOp(op string, d time.Duration, err error) {
	m.storeOps.WithLabelValues(op).Observe(d.Seconds())
	if err != nil {
		m.storeErrors.WithLabelValues(op).Inc()
	}
}

// TaskCreated implements engine.Observer.
func (m *Metrics) TaskCreated(tool string) { m.created.WithLabelValues(tool).Inc() }

// TaskClaimed implements engine.Observer.
func (m *Metrics) TaskClaimed(tool string, wait time.Duration, lost bool) {
	m.claimed.WithLabelValues(tool).Inc()
	if lost {
		m.leaseExpiries.WithLabelValues(tool).Inc()
	} else {
		m.claimWait.Observe(wait.Seconds())
	}
}

// TaskFinished implements engine.Observer.
func (m *Metrics) TaskFinished(tool string, status task.Status) {
	m.finished.WithLabelValues(tool, string(status)).Inc()
}

// liveCollector counts the store's live tasks at scrape time, at most
// once every countFresh: a count reads an index entry per live task (0.15 s
// at a million), and scrapes by the dozen must not each pay it. Scrapes
// count one at a time.
type liveCollector struct {
	c   store.Counter
	now func() time.Time

	mu   sync.Mutex
	last store.ActiveCounts
	at   time.Time // of last; zero: none yet
}

// countFresh is how long a count of the live tasks serves the scrapes
// that follow it.
const countFresh = 5 * time.Second

var (
	tasksDesc = prometheus.NewDesc("mcptasks_tasks", "Live tasks in the store, by status.", []string{"status"}, nil)
	queueDesc = prometheus.NewDesc("mcptasks_queue_depth", "Live tasks that no worker holds and that a worker may claim: new, released, or with an expired lease (not suspended ones, which wait for input).", nil, nil)
	countErr  = prometheus.NewDesc("mcptasks_store_count_errors", "1 when counting the live tasks failed at this scrape.", nil, nil)
)

// scrapeTimeout bounds the count query of one scrape.
const scrapeTimeout = 2 * time.Second

func (l *liveCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- tasksDesc
	ch <- queueDesc
	ch <- countErr
}

func (l *liveCollector) Collect(ch chan<- prometheus.Metric) {
	n, err := l.count()
	failed := 0.0
	if err != nil && !errors.Is(err, context.Canceled) {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(countErr, prometheus.GaugeValue, failed)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(tasksDesc, prometheus.GaugeValue, float64(n.Working), string(task.Working))
	ch <- prometheus.MustNewConstMetric(tasksDesc, prometheus.GaugeValue, float64(n.InputRequired), string(task.InputRequired))
	ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(n.Queued))
}

// count returns the live counts: the last ones if they are fresh, else new
// ones (an error is not kept).
func (l *liveCollector) count() (store.ActiveCounts, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if !l.at.IsZero() && now.Sub(l.at) < countFresh {
		return l.last, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	n, err := l.c.CountActive(ctx, now)
	if err != nil {
		return n, err
	}
	l.last, l.at = n, now
	return n, nil
}
