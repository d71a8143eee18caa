package approvals_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
)

// TestReplicas_MaxPendingHoldsAcrossReplicas: three replicas on one
// PostgreSQL database take 90 concurrent submissions of one agent whose
// max_pending is 10: exactly 10 wait, every other one is refused as too
// many pending, none is lost to an error (the replicas' counting
// transactions take turns: storage.DB.CapLock).
func TestReplicas_MaxPendingHoldsAcrossReplicas(t *testing.T) {
	fs := replicas(t, 3)
	ctx := context.Background()
	const max, n = 10, 90
	var wg sync.WaitGroup
	var mu sync.Mutex
	pending, refused := 0, 0
	var other []error
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			r, _, err := fs[i%len(fs)].svc.Submit(ctx, approvals.Submission{Profile: profile, CallID: fmt.Sprintf("cap-%d", i),
				Capability: "fs:read", Target: fmt.Sprintf("/srv/cap/%d.txt", i), Channel: "web", SenderID: "owner",
				Timeout: time.Hour, MaxPending: max})
			var tm *approvals.TooManyPendingError
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.As(err, &tm):
				refused++
			case err != nil:
				other = append(other, err)
			case r.Status == approvals.StatusPending:
				pending++
			}
		})
	}
	close(start)
	wg.Wait()
	if pending != max || refused != n-max || len(other) > 0 {
		t.Fatalf("%d pending, %d refused, errors %v; want %d and %d", pending, refused, other, max, n-max)
	}
}
