package approvals_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/internal/testclock"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/storage/storagetest"
)

func (f *fixture) grant(t *testing.T, target string, ttl time.Duration) policy.Grant {
	t.Helper()
	g, err := f.grants.Record(context.Background(), policy.NewGrant{
		Principal: policy.Principal{Channel: "web", SenderID: "owner"}, Capability: "fs:read",
		Target: target, GrantedBy: "web:owner", TTL: ttl,
	})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func (f *fixture) getGrant(t *testing.T, id int64) policy.Grant {
	t.Helper()
	g, err := f.grants.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func reason(g policy.Grant) string {
	if g.RevokeReason == nil {
		return ""
	}
	return *g.RevokeReason
}

// tableCounts is the number of rows of the tables prune changes.
func (f *fixture) tableCounts(t *testing.T) [4]int {
	return [4]int{
		f.count(t, `SELECT COUNT(*) FROM requests`),
		f.count(t, `SELECT COUNT(*) FROM grants`),
		f.count(t, `SELECT COUNT(*) FROM grants WHERE revoked_at IS NOT NULL`),
		f.count(t, `SELECT COUNT(*) FROM audit WHERE event != 'prune'`),
	}
}

// TestPrune_InjectedClock walks a year and a half on an injected clock:
// grants unused for stale_after are revoked with reason stale, expired ones
// marked, and finished requests and dead grants past retention deleted,
// never the audit trail nor a pending request.
func TestPrune_InjectedClock(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()

	unused := f.grant(t, "/srv/unused/*", 0)    // never used: stale after 90 days
	used := f.grant(t, "/srv/used/*", 0)        // used on day 80
	short := f.grant(t, "/srv/short/*", 30*day) // expires on day 30
	revoked := f.grant(t, "/srv/revoked/*", 0)  // revoked by a person on day 0
	if _, err := f.grants.Revoke(ctx, revoked.ID, "revoked", "web:owner"); err != nil {
		t.Fatal(err)
	}
	old := f.submit(t, "old", "/srv/old.txt", time.Hour)
	if _, err := f.svc.Decide(ctx, old.ID, approvals.Deny, approvals.Actor{Channel: "web", ID: "owner"}); err != nil {
		t.Fatal(err)
	}

	f.clock.Add(80 * day)
	g := f.getGrant(t, used.ID)
	if err := f.grants.Touch(ctx, &g); err != nil {
		t.Fatal(err)
	}

	// Day 91: unused is stale, short has expired; nothing is old enough to delete.
	f.clock.Add(11 * day)
	before := f.tableCounts(t)
	dry, err := f.svc.Prune(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if after := f.tableCounts(t); after != before || f.count(t, `SELECT COUNT(*) FROM audit WHERE event = 'prune'`) != 0 {
		t.Errorf("a dry run changed the tables: %v → %v", before, after)
	}
	rep, err := f.svc.Prune(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	dry.DryRun = false
	if !slices.Equal(dry.StaleRevoked, rep.StaleRevoked) || !slices.Equal(dry.ExpiredMarked, rep.ExpiredMarked) ||
		dry.RequestsDeleted != rep.RequestsDeleted || dry.GrantsDeleted != rep.GrantsDeleted {
		t.Errorf("dry run said %+v, the run did %+v", dry, rep)
	}
	if !slices.Equal(rep.StaleRevoked, []int64{unused.ID}) || !slices.Equal(rep.ExpiredMarked, []int64{short.ID}) ||
		rep.RequestsDeleted != 0 || rep.GrantsDeleted != 0 {
		t.Errorf("day 91 prune: %+v", rep)
	}
	if g := f.getGrant(t, unused.ID); g.Active || reason(g) != "stale" || g.RevokedAt == nil || !g.RevokedAt.Equal(f.clock.Now()) {
		t.Errorf("unused grant after prune: active %v reason %q revoked %v", g.Active, reason(g), g.RevokedAt)
	}
	if g := f.getGrant(t, short.ID); reason(g) != "expired" {
		t.Errorf("expired grant: reason %q", reason(g))
	}
	if g := f.getGrant(t, used.ID); !g.Active {
		t.Errorf("a grant used 11 days ago was revoked: %q", reason(g))
	}
	if g := f.getGrant(t, revoked.ID); reason(g) != "revoked" {
		t.Errorf("a person's revoke became %q", reason(g))
	}
	// The revokes are audited with the prune as their actor.
	rows, err := storage.ListAudit(ctx, f.db, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	staleAudited := false
	for _, r := range rows {
		if r.Event == storage.AuditGrantRevoked && r.GrantID == unused.ID && r.Actor == "prune" && r.Detail["reason"] == "stale" {
			staleAudited = true
		}
	}
	if !staleAudited || f.count(t, `SELECT COUNT(*) FROM audit WHERE event = 'prune'`) != 1 {
		t.Errorf("stale revoke audited %v; prune rows %d", staleAudited, f.count(t, `SELECT COUNT(*) FROM audit WHERE event = 'prune'`))
	}
	// A second pass the same day finds nothing.
	if rep, err := f.svc.Prune(ctx, false); err != nil || len(rep.StaleRevoked)+len(rep.ExpiredMarked)+rep.RequestsDeleted+rep.GrantsDeleted != 0 {
		t.Errorf("second pass: %+v, %v", rep, err)
	}

	// Day 400: a pending request made today stays; the old request, the
	// revoked and expired grants (dead over a year) go; used is now stale.
	f.clock.Add(309 * day)
	fresh := f.submit(t, "fresh", "/srv/fresh.txt", time.Hour)
	rep, err = f.svc.Prune(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.StaleRevoked, []int64{used.ID}) || rep.RequestsDeleted != 1 || rep.GrantsDeleted != 1 {
		t.Errorf("day 400 prune: %+v (want used stale, 1 request and the grant revoked on day 0 deleted)", rep)
	}
	if _, err := f.svc.Get(ctx, old.ID); err == nil {
		t.Error("the request decided 400 days ago is still there")
	}
	if _, err := f.grants.Get(ctx, revoked.ID); err == nil {
		t.Error("the grant revoked 400 days ago is still there")
	}
	if r, err := f.svc.Get(ctx, fresh.ID); err != nil || r.Status != approvals.StatusPending {
		t.Errorf("the pending request: %v", err)
	}
	if ev := f.auditEvents(t, old.ID); ev[storage.AuditOutcome] != 1 || ev[storage.AuditDecision] != 1 {
		t.Errorf("the deleted request's audit trail: %v", ev)
	}

	// Day 457: the grants revoked on day 91 are past retention too.
	f.clock.Add(57 * day)
	if rep, err = f.svc.Prune(ctx, false); err != nil || rep.GrantsDeleted != 2 {
		t.Errorf("day 457 prune: %+v, %v", rep, err)
	}
	if n := f.count(t, `SELECT COUNT(*) FROM grants`); n != 1 {
		t.Errorf("%d grants left, want 1 (used, revoked on day 400)", n)
	}
}

// TestStartScheduler_RunsAtStart: the prune job runs once at start-up.
func TestStartScheduler_RunsAtStart(t *testing.T) {
	f := newFixture(t)
	g := f.grant(t, "/srv/x/*", 0)
	f.clock.Add(staleTTL + day)
	stop, err := f.svc.StartScheduler(context.Background(), "@hourly", nil)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for f.getGrant(t, g.ID).Active && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if g := f.getGrant(t, g.ID); g.Active || reason(g) != "stale" {
		t.Errorf("grant after start-up prune: active %v reason %q", g.Active, reason(g))
	}
	if _, err := f.svc.StartScheduler(context.Background(), "every now and then", nil); err == nil {
		t.Error("a bad schedule was accepted")
	}
}

// TestPrune_AuditRetentionKeepsChain: the prune job removes audit rows
// older than the retention with the requests they describe, leaves a
// checkpoint, and the chain still verifies (and still catches a row
// removed later).
func TestPrune_AuditRetentionKeepsChain(t *testing.T) {
	db := storagetest.Open(t)
	f := newFixtureOn(t, db, testclock.New(time.Now().UTC())) // the genesis row is written at the real now
	ctx := context.Background()
	old := f.submit(t, "old", "/srv/old.txt", time.Hour)
	if _, err := f.svc.Decide(ctx, old.ID, approvals.Deny, approvals.Actor{Channel: "web", ID: "owner"}); err != nil {
		t.Fatal(err)
	}
	f.clock.Add(400 * day)
	fresh := f.submit(t, "fresh", "/srv/fresh.txt", time.Hour)
	dry, err := f.svc.Prune(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := f.svc.Prune(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.AuditDeleted < 3 || dry.AuditDeleted != rep.AuditDeleted {
		t.Fatalf("audit rows deleted %d (dry run said %d), want the genesis, outcome and decision at least",
			rep.AuditDeleted, dry.AuditDeleted)
	}
	if ev := f.auditEvents(t, old.ID); len(ev) != 0 {
		t.Errorf("the old request's audit rows survived: %v", ev)
	}
	if ev := f.auditEvents(t, fresh.ID); ev[storage.AuditOutcome] != 1 {
		t.Errorf("the fresh request's audit rows: %v", ev)
	}
	v, err := db.VerifyAudit(ctx, nil)
	if err != nil || !v.OK {
		t.Fatalf("verify after prune: %v %q", err, v.Summary())
	}
	first, err := db.QueryAudit(ctx, storage.AuditFilter{Limit: 1})
	if err != nil || len(first) != 1 || first[0].Event != storage.AuditCheckpoint {
		t.Fatalf("first row after prune: %+v %v, want the checkpoint", first, err)
	}
	// Removing a row the prune job kept is caught.
	if _, err := db.ExecContext(ctx, `DELETE FROM audit WHERE seq = $1`, first[0].Seq+1); err != nil {
		t.Fatal(err)
	}
	if v, err := db.VerifyAudit(ctx, nil); err != nil || v.OK || v.BadSeq != first[0].Seq+1 || v.Problem != "removed" {
		t.Fatalf("verify after a deletion: %v %+v", err, v)
	}
}

// TestStartScheduler_Jobs: a job runs on the prune job's scheduler on its
// own spec; a bad spec of a job is refused with the job's name.
func TestStartScheduler_Jobs(t *testing.T) {
	f := newFixture(t)
	ran := make(chan struct{}, 8)
	stop, err := f.svc.StartScheduler(context.Background(), "@hourly", time.UTC,
		approvals.Job{Name: "digest", Spec: "@every 1s", Run: func(context.Context) { ran <- struct{}{} }})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ran:
	case <-time.After(30 * time.Second):
		t.Error("the job did not run")
	}
	stop()
	_, err = f.svc.StartScheduler(context.Background(), "@hourly", nil,
		approvals.Job{Name: "digest", Spec: "at six", Run: func(context.Context) {}})
	if err == nil || !strings.Contains(err.Error(), `digest schedule "at six"`) {
		t.Errorf("bad job spec: %v", err)
	}
}
