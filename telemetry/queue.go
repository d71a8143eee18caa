package telemetry

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// queue holds the finished spans until a goroutine of its own (run)
// exports them, Batching.Batch at a time: as soon as a batch is full,
// else every Batching.Delay, and on ForceFlush and Shutdown. Ending a
// span is one append under mu; a span that ends while Batching.Queue
// wait is dropped, and counted.
type queue struct {
	exp *exporter
	b   Batching
	log *slog.Logger

	mu     sync.Mutex
	full   [][]*span // batches of Batching.Batch spans, oldest first
	cur    []*span   // the batch being filled
	free   [][]*span // exported batches' slices, empty, for cur
	n      int       // spans in full and cur
	closed bool      // shut down: what ends now is dropped

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

// dropWarnEvery bounds how often dropped spans are logged.
const dropWarnEvery = time.Minute

func newQueue(exp *exporter, b Batching, log *slog.Logger) *queue {
	q := &queue{exp: exp, b: b, log: log, wake: make(chan struct{}, 1), flushes: make(chan chan error),
		stop: make(chan struct{}), done: make(chan struct{})}
	q.ctx, q.cancel = context.WithCancel(context.Background())
	return q
}

// add queues a finished span, or drops it.
func (q *queue) add(s *span) {
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
			q.cur = make([]*span, 0, q.b.Batch)
		}
	}
	q.cur = append(q.cur, s)
	q.n++
	full := len(q.cur) == q.b.Batch
	if full {
		q.full = append(q.full, q.cur)
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
		batch := q.take(all)
		if batch == nil {
			return first
		}
		ctx, cancel := context.WithTimeout(q.ctx, q.b.Timeout)
		err := q.exp.export(ctx, batch)
		cancel()
		if err != nil {
			q.failed.Add(uint64(len(batch)))
			q.log.Warn("telemetry: export failed", "spans", len(batch), "err", err)
			if first == nil {
				first = err
			}
		} else {
			q.exported.Add(uint64(len(batch)))
		}
		clear(batch) // the spans are garbage now
		q.mu.Lock()
		q.free = append(q.free, batch[:0])
		q.mu.Unlock()
	}
}

// take moves the oldest batch out of the queue: the oldest full one, else
// when all the one being filled, else nil.
func (q *queue) take(all bool) []*span {
	q.mu.Lock()
	defer q.mu.Unlock()
	var b []*span
	switch {
	case len(q.full) > 0:
		b = q.full[0]
		q.full[0] = nil
		q.full = q.full[1:]
	case all && len(q.cur) > 0:
		b, q.cur = q.cur, nil
	default:
		return nil
	}
	q.n -= len(b)
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
