package telemetry

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// queue holds the finished spans, written as OTLP's Span messages, until
// a goroutine of its own (run) exports them, Batching.Batch at a time: as
// soon as a batch is full, else every Batching.Delay, and on ForceFlush
// and Shutdown. A span is written when it ends, while the goroutine that
// ended it has it in its cache, and then is garbage: ending a span is its
// writing and one append of bytes under mu. A span that ends while
// Batching.Queue wait is dropped, and counted.
type queue struct {
	exp *exporter
	b   Batching
	log *slog.Logger

	mu     sync.Mutex
	full   []*batch // batches of Batching.Batch spans, oldest first
	cur    *batch   // the batch being filled
	free   []*batch // exported batches, empty, for cur: at most keepFree
	n      int      // spans in full and cur
	size   int      // the bytes of the last batch filled: a new one's capacity
	closed bool     // shut down: what ends now is dropped

	wake    chan struct{}
	flushes chan chan error
	stop    chan struct{}
	done    chan struct{}
	ctx     context.Context // the exports'; cancelled when a Shutdown runs out of time
	cancel  context.CancelFunc
	stopErr error // the last export's at Shutdown

	exported, failed, dropped atomic.Uint64
	warned                    uint64 // dropped when last said in the log
	warnedAt                  time.Time
}

// batch is spans written as ScopeSpans' field spans (appendSpan), after
// the exporter's room for what wraps them (exporter.room).
type batch struct {
	b []byte
	n int
}

// keepFree is how many exported batches are kept for reuse: what the
// queue holds after a burst is not kept past it. One is filled while
// another is exported: two are enough when the exports keep up.
const keepFree = 2

// dropWarnEvery bounds how often dropped spans are logged.
const dropWarnEvery = time.Minute

func newQueue(exp *exporter, b Batching, log *slog.Logger) *queue {
	q := &queue{exp: exp, b: b, log: log, wake: make(chan struct{}, 1), flushes: make(chan chan error),
		stop: make(chan struct{}), done: make(chan struct{})}
	q.ctx, q.cancel = context.WithCancel(context.Background())
	return q
}

// maxOnStack is what a span's message may take before writing it
// allocates: more than any span of the gateway takes.
const maxOnStack = 512

// add queues a finished span, or drops it.
func (q *queue) add(s *record) {
	var mem [maxOnStack]byte
	msg := appendSpan(mem[:0], s)
	q.mu.Lock()
	if q.closed || q.n >= q.b.Queue {
		q.mu.Unlock()
		q.dropped.Add(1)
		return
	}
	if q.cur == nil {
		if k := len(q.free); k > 0 {
			q.cur, q.free = q.free[k-1], q.free[:k-1]
		} else {
			q.cur = &batch{b: make([]byte, q.exp.room, max(q.size, q.exp.room))}
		}
	}
	q.cur.b = append(q.cur.b, msg...)
	q.cur.n++
	q.n++
	full := q.cur.n == q.b.Batch
	if full {
		q.full = append(q.full, q.cur)
		q.size = len(q.cur.b)
		q.cur = nil
	}
	q.mu.Unlock()
	if full {
		select {
		case q.wake <- struct{}{}:
		default: // already woken
		}
	}
}

// run exports until Shutdown.
func (q *queue) run() {
	defer close(q.done)
	tick := time.NewTicker(q.b.Delay)
	defer tick.Stop()
	for {
		select {
		case <-q.wake:
			_ = q.drain(false)
		case <-tick.C:
			_ = q.drain(true)
		case reply := <-q.flushes:
			reply <- q.drain(true)
		case <-q.stop:
			q.stopErr = q.drain(true)
			q.warnDropped(true)
			return
		}
		q.warnDropped(false)
	}
}

// drain exports the queued spans a batch at a time: every one when all,
// else the full batches. It returns the first export's error.
func (q *queue) drain(all bool) error {
	var first error
	for {
		b := q.take(all)
		if b == nil {
			return first
		}
		ctx, cancel := context.WithTimeout(q.ctx, q.b.Timeout)
		err := q.exp.export(ctx, b)
		cancel()
		if err != nil {
			q.failed.Add(uint64(b.n))
			q.log.Warn("telemetry: export failed", "spans", b.n, "err", err)
			if first == nil {
				first = err
			}
		} else {
			q.exported.Add(uint64(b.n))
		}
		b.b, b.n = b.b[:q.exp.room], 0
		q.mu.Lock()
		if len(q.free) < keepFree {
			q.free = append(q.free, b)
		}
		q.mu.Unlock()
	}
}

// take moves the oldest batch out of the queue: the oldest full one, else
// when all the one being filled, else nil.
func (q *queue) take(all bool) *batch {
	q.mu.Lock()
	defer q.mu.Unlock()
	var b *batch
	switch {
	case len(q.full) > 0:
		b = q.full[0]
		q.full[0] = nil
		q.full = q.full[1:]
	case all && q.cur != nil && q.cur.n > 0:
		b, q.cur = q.cur, nil
	default:
		return nil
	}
	q.n -= b.n
	return b
}

// warnDropped logs the spans dropped since it last did, at most once
// every dropWarnEvery unless now.
func (q *queue) warnDropped(now bool) {
	d := q.dropped.Load()
	if d == q.warned || !now && time.Since(q.warnedAt) < dropWarnEvery {
		return
	}
	q.log.Warn("telemetry: spans dropped, their traces incomplete (the queue was full, or the gateway stopping)",
		"dropped", d-q.warned, "queue", q.b.Queue)
	q.warned, q.warnedAt = d, time.Now()
}

// flush exports everything queued now.
func (q *queue) flush(ctx context.Context) error {
	reply := make(chan error, 1)
	select {
	case q.flushes <- reply:
	case <-q.done:
		return nil // shut down: nothing is queued
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// shutdown exports what is queued, stops run and the client.
func (q *queue) shutdown(ctx context.Context) error {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	close(q.stop)
	var err error
	select {
	case <-q.done:
		err = q.stopErr
	case <-ctx.Done():
		q.cancel()
		<-q.done
		err = ctx.Err()
	}
	q.cancel()
	if e := q.exp.client.Stop(ctx); e != nil && err == nil {
		err = e
	}
	return err
}
