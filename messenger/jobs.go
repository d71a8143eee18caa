package messenger

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Jobs runs a messenger's work after the platform has been answered
// (Slack and Discord want an answer within 3 seconds; a decision or a
// listing may take longer under load), each with its own timeout, and
// tracks it so that Drain can wait for it at shutdown.
type Jobs struct {
	log     *slog.Logger
	timeout time.Duration

	mu     sync.Mutex
	wg     sync.WaitGroup
	closed bool
	ctx    context.Context
	cancel context.CancelFunc
}

// NewJobs returns a Jobs whose work gets timeout each; log names dropped work.
func NewJobs(log *slog.Logger, timeout time.Duration) *Jobs {
	j := &Jobs{log: log, timeout: timeout}
	j.ctx, j.cancel = context.WithCancel(context.Background())
	return j
}

// Go runs work in its own goroutine, unless a Drain is under way (then the
// work is dropped, logged).
func (j *Jobs) Go(work func(ctx context.Context)) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		j.log.Warn("shutting down; dropped messenger work")
		return
	}
	j.wg.Add(1)
	ctx := j.ctx // Drain replaces it
	go func() {
		defer j.wg.Done()
		ctx, cancel := context.WithTimeout(ctx, j.timeout)
		defer cancel()
		work(ctx)
	}()
}

// Wait waits for the work under way (tests: "the answer's work is done").
func (j *Jobs) Wait() { j.wg.Wait() }

// Drain lets the work under way finish for grace, then cancels what is
// left and waits for it. Then it takes work again: with several replicas a
// messenger's Run runs only while its replica leads, and a replica that
// stops leading still serves the messenger's HTTP endpoints, and may lead
// again.
func (j *Jobs) Drain(grace time.Duration) {
	j.mu.Lock()
	j.closed = true
	j.mu.Unlock()
	done := make(chan struct{})
	go func() { j.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		j.cancel()
		<-done
	}
	j.cancel()
	j.mu.Lock()
	j.ctx, j.cancel = context.WithCancel(context.Background())
	j.closed = false
	j.mu.Unlock()
}
