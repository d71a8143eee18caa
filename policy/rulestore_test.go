package policy_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/storage/storagetest"
)

// fileRules are the config file's rules of the rule store tests.
var fileRules = []policy.Rule{
	{Index: 0, Capability: "code:exec", Target: "git status*", Action: policy.ActionApprove},
	{Index: 1, Capability: "*", Target: "*password*", Action: policy.ActionBlock},
	{Index: 2, Capability: "fs:write", Target: "/srv/**", Action: policy.ActionApprove, Agent: "metnos"},
}

func knownAgents(id string) bool { return id == "metnos" || id == "helper" }

func newRuleStore(t testing.TB, db *storage.DB) *policy.RuleStore {
	t.Helper()
	s := policy.NewRuleStore(db, fileRules, knownAgents, newClock().Now)
	t.Cleanup(func() { s.Close() })
	return s
}

func addRule(t testing.TB, s *policy.RuleStore, nr policy.NewRule) policy.RuleInfo {
	t.Helper()
	ri, err := s.Add(context.Background(), nr, "test")
	if err != nil {
		t.Fatalf("Add(%+v): %v", nr, err)
	}
	return ri
}

// order renders a listing as "id@owner/position" in list order.
func order(t testing.TB, s *policy.RuleStore) string {
	t.Helper()
	list, err := s.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, ri := range list {
		parts = append(parts, fmt.Sprintf("%s@%s/%d", ri.ID, ri.Owner, ri.Position))
	}
	return strings.Join(parts, " ")
}

func TestRules_PositionsWithinOwner(t *testing.T) {
	db := storagetest.Open(t)
	s := newRuleStore(t, db)
	if got, want := order(t, s), "config:1@org/1 config:2@org/2 config:3@user/1"; got != want {
		t.Fatalf("empty store lists %q, want %q", got, want)
	}
	a := addRule(t, s, policy.NewRule{Capability: "fs:write", Target: "/tmp/*", Action: policy.ActionApprove})
	b := addRule(t, s, policy.NewRule{Capability: "fs:read", Target: "*", Action: policy.ActionApprove}) // top by default
	c := addRule(t, s, policy.NewRule{Capability: "mail:send", Target: "*", Action: policy.ActionBlock,
		Position: policy.Position{Bottom: true}})
	d := addRule(t, s, policy.NewRule{Capability: "fs:*", Target: "/etc/**", Action: policy.ActionBlock,
		Position: policy.Position{N: 2}})
	u := addRule(t, s, policy.NewRule{Capability: "fs:read", Target: "*", Action: policy.ActionApprove, SenderID: "roberto",
		Position: policy.Position{N: 99}}) // clamped to the end of the user's run-time rules
	if b.Position != 1 || u.Owner != "user" || u.Position != 1 || b.Source != "api" || b.CreatedBy != "test" || b.CreatedAt == nil {
		t.Errorf("added rules: %+v %+v", b, u)
	}
	want := fmt.Sprintf("%s@org/1 %s@org/2 %s@org/3 %s@org/4 config:1@org/5 config:2@org/6 %s@user/1 config:3@user/2",
		b.ID, d.ID, a.ID, c.ID, u.ID)
	if got := order(t, s); got != want {
		t.Fatalf("order\n got %s\nwant %s", got, want)
	}
	// Move the bottom one to the top, then remove the second: positions stay dense.
	top := policy.Position{}
	if _, err := s.Update(context.Background(), c.ID, policy.RulePatch{Position: &top}, "test"); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(context.Background(), b.ID, "test"); err != nil {
		t.Fatal(err)
	}
	want = fmt.Sprintf("%s@org/1 %s@org/2 %s@org/3 config:1@org/4 config:2@org/5 %s@user/1 config:3@user/2",
		c.ID, d.ID, a.ID, u.ID)
	if got := order(t, s); got != want {
		t.Fatalf("after move and remove\n got %s\nwant %s", got, want)
	}
	// A scope change moves the rule to the other owner, at the top.
	sender := "roberto"
	moved, err := s.Update(context.Background(), a.ID, policy.RulePatch{SenderID: &sender}, "test")
	if err != nil {
		t.Fatal(err)
	}
	if moved.Owner != "user" || moved.Position != 1 {
		t.Errorf("scoped rule: %+v", moved)
	}
	want = fmt.Sprintf("%s@org/1 %s@org/2 config:1@org/3 config:2@org/4 %s@user/1 %s@user/2 config:3@user/3",
		c.ID, d.ID, a.ID, u.ID)
	if got := order(t, s); got != want {
		t.Fatalf("after scope change\n got %s\nwant %s", got, want)
	}
}

func TestRules_ValidatedAsTheFile(t *testing.T) {
	db := storagetest.Open(t)
	s := newRuleStore(t, db)
	for _, tc := range []struct {
		name  string
		rule  policy.NewRule
		field string
	}{
		{"unknown capability", policy.NewRule{Capability: "fs:wirte", Target: "*", Action: policy.ActionBlock}, "capability"},
		{"unknown prefix", policy.NewRule{Capability: "nope:*", Target: "*", Action: policy.ActionBlock}, "capability"},
		{"unknown action", policy.NewRule{Capability: "fs:read", Target: "*", Action: "alow"}, "action"},
		{"no action", policy.NewRule{Capability: "fs:read", Target: "*"}, "action"},
		{"no target", policy.NewRule{Capability: "fs:read", Action: policy.ActionBlock}, "target"},
		{"bad glob", policy.NewRule{Capability: "fs:read", Target: "[", Action: policy.ActionBlock}, "target"},
		{"approve * on code:exec", policy.NewRule{Capability: "code:exec", Target: "*", Action: policy.ActionApprove}, "target"},
		{"approve ** on mail:send", policy.NewRule{Capability: "mail:*", Target: "**", Action: policy.ActionApprove}, "target"},
		{"approve * on everything", policy.NewRule{Capability: "*", Target: " * ", Action: policy.ActionApprove}, "target"},
		// By meaning, not by spelling: each matches arbitrary commands.
		{"approve ?* on code:exec", policy.NewRule{Capability: "code:exec", Target: "?*", Action: policy.ActionApprove}, "target"},
		{"approve *? on code:*", policy.NewRule{Capability: "code:*", Target: "*?", Action: policy.ActionApprove}, "target"},
		{"approve ??* on *", policy.NewRule{Capability: "*", Target: "??*", Action: policy.ActionApprove}, "target"},
		{"approve r* on code:exec", policy.NewRule{Capability: "code:exec", Target: "r*", Action: policy.ActionApprove}, "target"},
		{"approve git * on code:exec", policy.NewRule{Capability: "code:exec", Target: "git *", Action: policy.ActionApprove}, "target"},
		{"approve bash -c * on code:exec", policy.NewRule{Capability: "code:exec", Target: "bash -c *", Action: policy.ActionApprove}, "target"},
		{"approve *@* on mail:*", policy.NewRule{Capability: "mail:*", Target: "*@*", Action: policy.ActionApprove}, "target"},
		{"approve ?*@?* on mail:send", policy.NewRule{Capability: "mail:send", Target: "?*@?*", Action: policy.ActionApprove}, "target"},
		{"unknown agent", policy.NewRule{Capability: "fs:read", Target: "*", Action: policy.ActionBlock, Agent: "ghost"}, "agent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Add(context.Background(), tc.rule, "test")
			var fe *policy.FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field || !errors.Is(err, policy.ErrInvalid) {
				t.Fatalf("Add = %v, want a FieldError on %s", err, tc.field)
			}
			// The file's validation says the same.
			probs := policy.CheckRule(policy.Rule{Capability: tc.rule.Capability, Target: tc.rule.Target,
				Action: tc.rule.Action, Agent: tc.rule.Agent}, knownAgents)
			if len(probs) == 0 || probs[0].Field != tc.field || probs[0].Error() != fe.Error() {
				t.Errorf("CheckRule = %v, want %v", probs, fe)
			}
		})
	}
	if got := order(t, s); strings.Contains(got, "api:") {
		t.Errorf("refused rules were stored: %s", got)
	}
	// approve on code:exec with a narrow target is fine.
	addRule(t, s, policy.NewRule{Capability: "code:exec", Target: "make test", Action: policy.ActionApprove})
	// So is an update that stays valid; one that does not is refused and changes nothing.
	ri := addRule(t, s, policy.NewRule{Capability: "code:exec", Target: "ls", Action: policy.ActionBlock})
	star, approve := "*", policy.ActionApprove
	if _, err := s.Update(context.Background(), ri.ID, policy.RulePatch{Target: &star, Action: &approve}, "test"); err == nil {
		t.Fatal("Update to approve * on code:exec succeeded")
	}
	if got, _ := s.Get(context.Background(), ri.ID); got.Target != "ls" || got.Action != policy.ActionBlock {
		t.Errorf("refused update changed the rule: %+v", got)
	}
}

func TestRules_FileRulesReadOnly(t *testing.T) {
	db := storagetest.Open(t)
	s := newRuleStore(t, db)
	block := policy.ActionBlock
	ctx := context.Background()
	if _, err := s.Update(ctx, "config:1", policy.RulePatch{Action: &block}, "test"); !errors.Is(err, policy.ErrRuleFromConfig) {
		t.Errorf("Update(config:1) = %v, want ErrRuleFromConfig", err)
	}
	if err := s.Remove(ctx, "config:2", "test"); !errors.Is(err, policy.ErrRuleFromConfig) {
		t.Errorf("Remove(config:2) = %v, want ErrRuleFromConfig", err)
	}
	if err := s.Remove(ctx, "config:9", "test"); !errors.Is(err, policy.ErrNotFound) {
		t.Errorf("Remove(config:9) = %v, want ErrNotFound", err)
	}
	if err := s.Remove(ctx, "api:9", "test"); !errors.Is(err, policy.ErrNotFound) {
		t.Errorf("Remove(api:9) = %v, want ErrNotFound", err)
	}
	var fe *policy.FieldError
	if err := s.Remove(ctx, "bogus", "test"); !errors.As(err, &fe) || fe.Field != "id" {
		t.Errorf("Remove(bogus) = %v, want a FieldError on id", err)
	}
}

// TestRules_NextDecisionSeesChanges: a rule added or removed through
// another handle on the database (the CLI, another replica) decides the
// very next decision of a decider that has already cached the rules.
func TestRules_NextDecisionSeesChanges(t *testing.T) {
	db := storagetest.Open(t)
	other := storagetest.Reopen(t, db)
	mine, theirs := newRuleStore(t, db), newRuleStore(t, other)
	d := &policy.Decider{Source: mine, Norm: testNorm}
	ctx := context.Background()
	in := policy.Input{Profile: policy.Profile{Agent: "metnos", Ceiling: policy.Full}, Capability: "fs:write",
		Target: "/home/r/notes.txt", Channel: "web", SenderID: "owner"}
	decide := func() policy.Decision {
		t.Helper()
		dec, err := d.Decide(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		return dec
	}
	for range 3 { // warm the cache
		if dec := decide(); dec.Outcome != policy.Allowed {
			t.Fatalf("no rules: %s (%s)", dec.Outcome, dec.Reason)
		}
	}
	ri := addRule(t, theirs, policy.NewRule{Capability: "fs:write", Target: "~/notes*", Action: policy.ActionRequireApproval})
	dec := decide()
	if dec.Outcome != policy.ApprovalRequired || dec.Reason != "rule "+ri.ID+" requires approval" {
		t.Fatalf("after add elsewhere: %s (%s)", dec.Outcome, dec.Reason)
	}
	block := policy.ActionBlock
	if _, err := theirs.Update(ctx, ri.ID, policy.RulePatch{Action: &block}, "test"); err != nil {
		t.Fatal(err)
	}
	if dec := decide(); dec.Outcome != policy.Denied || dec.BlockedBy != policy.BlockedByPolicy {
		t.Fatalf("after update elsewhere: %s (%s)", dec.Outcome, dec.Reason)
	}
	if err := theirs.Remove(ctx, ri.ID, "test"); err != nil {
		t.Fatal(err)
	}
	if dec := decide(); dec.Outcome != policy.Allowed {
		t.Fatalf("after remove elsewhere: %s (%s)", dec.Outcome, dec.Reason)
	}
}

// TestRules_RunTimeFirstWithinOwner: within an owner a run-time rule comes
// before the file's; across owners the most restrictive wins, and a block
// is an air-gap wherever it stands.
func TestRules_RunTimeFirstWithinOwner(t *testing.T) {
	db := storagetest.Open(t)
	s := newRuleStore(t, db)
	d := &policy.Decider{Source: s, Norm: testNorm}
	ctx := context.Background()
	decide := func(capability, target string) policy.Decision {
		t.Helper()
		dec, err := d.Decide(ctx, policy.Input{Profile: policy.Profile{Agent: "metnos", Ceiling: policy.Supervised},
			Capability: capability, Target: target, Channel: "web", SenderID: "owner"})
		if err != nil {
			t.Fatal(err)
		}
		return dec
	}
	if dec := decide("code:exec", "git status"); dec.Outcome != policy.Allowed || dec.Reason != "approved by rule #1" {
		t.Fatalf("file rule: %s (%s)", dec.Outcome, dec.Reason)
	}
	ri := addRule(t, s, policy.NewRule{Capability: "code:exec", Target: "git *", Action: policy.ActionRequireApproval})
	if dec := decide("code:exec", "git status"); dec.Outcome != policy.ApprovalRequired ||
		!strings.Contains(fmt.Sprint(dec.Trace), "rule "+ri.ID+" (org") {
		t.Fatalf("run-time org rule first: %s (%s) %v", dec.Outcome, dec.Reason, dec.Trace)
	}
	// A user approve cannot weaken the file's org block of *password*.
	addRule(t, s, policy.NewRule{Capability: "fs:read", Target: "**", Action: policy.ActionApprove, Agent: "metnos"})
	if dec := decide("fs:read", "/home/r/password.txt"); dec.Outcome != policy.Denied {
		t.Fatalf("user approve vs org block: %s (%s)", dec.Outcome, dec.Reason)
	}
	if dec := decide("fs:read", "/home/r/notes.txt"); dec.Outcome != policy.Allowed {
		t.Fatalf("user approve: %s (%s)", dec.Outcome, dec.Reason)
	}
	// A run-time block placed at the bottom still wins over an approve above it.
	addRule(t, s, policy.NewRule{Capability: "fs:read", Target: "/home/r/secret*", Action: policy.ActionBlock,
		Agent: "metnos", Position: policy.Position{Bottom: true}})
	if dec := decide("fs:read", "/home/r/secret.txt"); dec.Outcome != policy.Denied {
		t.Fatalf("bottom block: %s (%s)", dec.Outcome, dec.Reason)
	}
}

func TestRules_EveryChangeAudited(t *testing.T) {
	db := storagetest.Open(t)
	s := newRuleStore(t, db)
	ctx := context.Background()
	ri, err := s.Add(ctx, policy.NewRule{Capability: "network:http", Target: "*.example.com", Action: policy.ActionApprove,
		Channel: "telegram"}, "api:admin")
	if err != nil {
		t.Fatal(err)
	}
	block := policy.ActionBlock
	if _, err := s.Update(ctx, ri.ID, policy.RulePatch{Action: &block}, "cli:roberto"); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, ri.ID, "web:owner"); err != nil {
		t.Fatal(err)
	}
	rows, err := storage.ListAudit(ctx, db, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d audit rows, want 3", len(rows))
	}
	for i, want := range []struct{ event, actor, action string }{
		{storage.AuditRuleRemoved, "web:owner", "block"},
		{storage.AuditRuleChanged, "cli:roberto", "block"},
		{storage.AuditRuleAdded, "api:admin", "approve"},
	} {
		e := rows[i]
		if e.Event != want.event || e.Actor != want.actor || e.Detail["action"] != want.action ||
			e.Detail["rule_id"] != ri.ID || e.Detail["channel"] != "telegram" {
			t.Errorf("audit row %d: %+v", i, e)
		}
	}
	if before, _ := rows[1].Detail["before"].(map[string]any); before["action"] != "approve" {
		t.Errorf("change row lacks the rule before: %+v", rows[1].Detail)
	}
}

// TestRules_ConcurrentAddsKeepPositionsDense: rule changes from several
// processes at once (two handles here) serialize on the version row, so
// positions stay 1..n with no duplicate.
func TestRules_ConcurrentAddsKeepPositionsDense(t *testing.T) {
	db := storagetest.Open(t)
	stores := []*policy.RuleStore{newRuleStore(t, db), newRuleStore(t, storagetest.Reopen(t, db))}
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pos := policy.Position{}
			if i%3 == 1 {
				pos.Bottom = true
			} else if i%3 == 2 {
				pos.N = 2
			}
			_, err := stores[i%2].Add(context.Background(), policy.NewRule{Capability: "fs:read",
				Target: fmt.Sprintf("/r/%d", i), Action: policy.ActionBlock, Position: pos}, "test")
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	rows, err := db.QueryContext(context.Background(), `SELECT position FROM policy_rules WHERE owner = 'org' ORDER BY position`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	want := 1
	for rows.Next() {
		var p int
		if err := rows.Scan(&p); err != nil {
			t.Fatal(err)
		}
		if p != want {
			t.Fatalf("position %d where %d was expected: not dense", p, want)
		}
		want++
	}
	if want != 21 {
		t.Fatalf("%d rules stored, want 20", want-1)
	}
}
