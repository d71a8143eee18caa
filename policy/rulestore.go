package policy

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/metnos/gateway/storage"
)

const ruleColumns = `id, owner, position, capability, target, action, sender_id, agent, channel, created_at, created_by`

// The statements of this file.
const (
	selectRules     = `SELECT ` + ruleColumns + ` FROM policy_rules ORDER BY owner, position, id`
	makeRoomForRule = `UPDATE policy_rules SET position = position + 1
	WHERE owner = $1 AND position >= $2`
	insertRule = `INSERT INTO policy_rules
	(owner, position, capability, target, action, sender_id, agent, channel, created_at, created_by, updated_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $9) RETURNING id`
	closeRuleGap = `UPDATE policy_rules SET position = position - 1
	WHERE owner = $1 AND position > $2`
	makeRoomForMovedRule = `UPDATE policy_rules SET position = position + 1
	WHERE owner = $1 AND position >= $2 AND id <> $3`
	updateRule = `UPDATE policy_rules SET owner = $1, position = $2, target = $3, action = $4,
	sender_id = $5, agent = $6, channel = $7, updated_at = $8 WHERE id = $9`
	deleteRule    = `DELETE FROM policy_rules WHERE id = $1`
	selectRule    = `SELECT ` + ruleColumns + ` FROM policy_rules WHERE id = $1`
	countOwnRules = `SELECT COUNT(*) FROM policy_rules WHERE owner = $1 AND id <> $2`
)

// Where a rule comes from.
const (
	SourceAPI    = "api"    // added at run time (API, CLI, web page, a messenger); stored in the database
	SourceConfig = "config" // a [[policy.rules]] entry of the config file; read-only at run time
)

// ErrRuleFromConfig: a rule of the config file cannot be changed or
// removed at run time; edit the file.
var ErrRuleFromConfig = errors.New("rule comes from the config file")

// RuleInfo is a rule as GET /v1/policy/rules and `gateway policy rules`
// show it. Position counts within the owner from 1, run-time rules first.
type RuleInfo struct {
	ID         string     `json:"id"`
	Source     string     `json:"source"`
	Owner      string     `json:"owner"`
	Position   int        `json:"position"`
	Capability string     `json:"capability"`
	Target     string     `json:"target"`
	Action     Action     `json:"action"`
	SenderID   string     `json:"sender_id"`
	Agent      string     `json:"agent"`
	Channel    string     `json:"channel"`
	CreatedAt  *time.Time `json:"created_at"`
	CreatedBy  string     `json:"created_by"`
}

// Rule returns the rule as the decider evaluates it.
func (ri RuleInfo) Rule() Rule {
	return Rule{ID: ri.ID, Capability: ri.Capability, Target: ri.Target, Action: ri.Action,
		SenderID: ri.SenderID, Agent: ri.Agent, Channel: ri.Channel}
}

// Position says where a new or moved rule goes within its owner: the top
// (the default, as in Executor), the bottom of the run-time rules, or a
// 1-based place among them (clamped to the list).
type Position struct {
	Bottom bool
	N      int // 0 with Bottom false = the top
}

// ParsePosition reads "top", "bottom" or a positive number.
func ParsePosition(s string) (Position, error) {
	switch s {
	case "", "top":
		return Position{}, nil
	case "bottom":
		return Position{Bottom: true}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return Position{}, &FieldError{Field: "position", Err: fmt.Errorf("want top, bottom or a number from 1, got %q", s)}
	}
	return Position{N: n}, nil
}

// ParsePositionJSON reads a JSON position: "top", "bottom", a number, or
// a number in a string. Empty input means the top.
func ParsePositionJSON(b json.RawMessage) (Position, error) {
	if len(b) == 0 || string(b) == "null" {
		return Position{}, nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err == nil {
		return ParsePosition(n.String())
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return Position{}, &FieldError{Field: "position", Err: errors.New("want top, bottom or a number")}
	}
	return ParsePosition(s)
}

// place turns the position into a 1-based index among n rules (n+1 = after all).
func (p Position) place(n int) int {
	switch {
	case p.Bottom:
		return n + 1
	case p.N == 0:
		return 1
	}
	return min(p.N, n+1)
}

// NewRule is a rule to add at run time.
type NewRule struct {
	Capability string
	Target     string
	Action     Action
	SenderID   string
	Agent      string
	Channel    string
	Position   Position
	// Signed, when set, is added to the rule's audit row: the passkey
	// assertion of the admin who made the change (passkeys.Proof's
	// AuditDetail), so the row carries its own signature.
	Signed map[string]any
}

// RulePatch changes a run-time rule; nil fields stay as they are. A rule
// whose scope change moves it to the other owner goes to the top of that
// owner unless Position says otherwise.
type RulePatch struct {
	Target   *string
	Action   *Action
	SenderID *string
	Agent    *string
	Channel  *string
	Position *Position
}

// RuleStore keeps the rules added at run time in the database, beside the
// config file's, and gives the decider both (RuleSource). Before every
// decision it asks a change version whether any process changed the rules,
// and reads them again only then, so an add or a remove from another
// replica or the CLI takes effect on the very next decision.
type RuleStore struct {
	db      *storage.DB
	config  []Rule
	known   func(string) bool
	now     func() time.Time
	version *storage.GrantsVersion

	mu     sync.Mutex
	ver    int64
	loaded bool
	rules  []Rule // run-time rules by owner and position, then the file's
}

// NewRuleStore returns the rules of db plus config (the file's, in file
// order). knownAgent validates a rule's agent scope (nil: any agent).
func NewRuleStore(db *storage.DB, config []Rule, knownAgent func(string) bool, now func() time.Time) *RuleStore {
	if now == nil {
		now = time.Now
	}
	cfg := make([]Rule, len(config))
	copy(cfg, config)
	return &RuleStore{db: db, config: cfg, known: knownAgent, now: now,
		version: storage.NewChangeVersion(db, storage.RulesVersionTable)}
}

// Close releases the change version's connection.
func (s *RuleStore) Close() error { return s.version.Close() }

// Rules returns the rules in force now: run-time rules first within each
// owner, then the file's. An error (the database unreachable) fails the
// decision: nothing is decided on rules that may be stale.
func (s *RuleStore) Rules(ctx context.Context) ([]Rule, error) {
	ver, verr := s.version.Current(ctx)
	if verr == nil {
		s.mu.Lock()
		if s.loaded && s.ver == ver {
			r := s.rules
			s.mu.Unlock()
			return r, nil
		}
		s.mu.Unlock()
	}
	stored, err := s.loadStored(ctx, s.db)
	if err != nil {
		return nil, err
	}
	rules := make([]Rule, 0, len(stored)+len(s.config))
	for _, ri := range stored {
		rules = append(rules, ri.Rule())
	}
	rules = append(rules, s.config...)
	if verr == nil {
		// Read after the version: a change committed in between makes the
		// next call read again, never keeps a stale list.
		s.mu.Lock()
		s.rules, s.ver, s.loaded = rules, ver, true
		s.mu.Unlock()
	}
	return rules, nil
}

func scanRule(sc scanner) (RuleInfo, error) {
	var ri RuleInfo
	var id int64
	var created string
	if err := sc.Scan(&id, &ri.Owner, &ri.Position, &ri.Capability, &ri.Target, &ri.Action,
		&ri.SenderID, &ri.Agent, &ri.Channel, &created, &ri.CreatedBy); err != nil {
		return RuleInfo{}, err
	}
	ri.ID, ri.Source = SourceAPI+":"+strconv.FormatInt(id, 10), SourceAPI
	if t, err := storage.ParseTime(created); err == nil {
		ri.CreatedAt = &t
	}
	return ri, nil
}

func (s *RuleStore) loadStored(ctx context.Context, q storage.Querier) ([]RuleInfo, error) {
	rows, err := q.QueryContext(ctx, selectRules)
	if err != nil {
		return nil, fmt.Errorf("load rules: %w", err)
	}
	defer rows.Close()
	var out []RuleInfo
	for rows.Next() {
		ri, err := scanRule(rows)
		if err != nil {
			return nil, fmt.Errorf("load rules: %w", err)
		}
		out = append(out, ri)
	}
	return out, rows.Err()
}

// List returns every rule, in evaluation order within each owner (org
// first, then user): the run-time rules by position, then the file's in
// file order, with positions counting on.
func (s *RuleStore) List(ctx context.Context) ([]RuleInfo, error) {
	stored, err := s.loadStored(ctx, s.db)
	if err != nil {
		return nil, err
	}
	out := []RuleInfo{}
	for _, owner := range []string{"org", "user"} {
		n := 0
		for _, ri := range stored {
			if ri.Owner == owner {
				n++
				ri.Position = n
				out = append(out, ri)
			}
		}
		for _, r := range s.config {
			if r.Owner() == owner {
				n++
				out = append(out, RuleInfo{ID: SourceConfig + ":" + strconv.Itoa(r.Index+1), Source: SourceConfig,
					Owner: owner, Position: n, Capability: r.Capability, Target: r.Target, Action: r.Action,
					SenderID: r.SenderID, Agent: r.Agent, Channel: r.Channel, CreatedBy: SourceConfig})
			}
		}
	}
	return out, nil
}

// parseRuleID reads "api:12" (or just "12") and "config:3". It returns the
// run-time rule's number, or ErrRuleFromConfig for a rule of the file.
func (s *RuleStore) parseRuleID(id string) (int64, error) {
	src, num, ok := strings.Cut(id, ":")
	if !ok {
		src, num = SourceAPI, id
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 1 || (src != SourceAPI && src != SourceConfig) {
		return 0, &FieldError{Field: "id", Err: fmt.Errorf("%q is not a rule id (api:N or config:N)", id)}
	}
	if src == SourceConfig {
		for _, r := range s.config {
			if int64(r.Index+1) == n {
				return 0, fmt.Errorf("rule %s: %w: edit the file (and restart) to change it", id, ErrRuleFromConfig)
			}
		}
		return 0, fmt.Errorf("rule %s: %w", id, ErrNotFound)
	}
	return n, nil
}

// firstProblem turns CheckRule's problems into one error naming the first field.
func firstProblem(probs []*FieldError) error {
	if len(probs) == 0 {
		return nil
	}
	return probs[0]
}

// Add stores a run-time rule at its position, with its audit row, and
// returns it as List shows it.
func (s *RuleStore) Add(ctx context.Context, nr NewRule, by string) (RuleInfo, error) {
	r := Rule{Capability: nr.Capability, Target: nr.Target, Action: nr.Action,
		SenderID: nr.SenderID, Agent: nr.Agent, Channel: nr.Channel}
	if err := firstProblem(CheckRule(r, s.known)); err != nil {
		return RuleInfo{}, err
	}
	var out RuleInfo
	err := s.db.InTx(ctx, func(tx storage.Querier) error {
		if err := storage.BumpVersion(ctx, tx, storage.RulesVersionTable); err != nil {
			return err
		}
		owner := r.Owner()
		n, err := countOwner(ctx, tx, owner, 0)
		if err != nil {
			return err
		}
		pos := nr.Position.place(n)
		if _, err := tx.ExecContext(ctx, makeRoomForRule, owner, pos); err != nil {
			return fmt.Errorf("add rule: %w", err)
		}
		now := storage.FormatTime(s.now())
		var id int64
		if err := tx.QueryRowContext(ctx, insertRule,
			owner, pos, r.Capability, r.Target, string(r.Action), r.SenderID, r.Agent, r.Channel, now, by).Scan(&id); err != nil {
			return fmt.Errorf("add rule: %w", err)
		}
		if out, err = getRule(ctx, tx, id); err != nil {
			return err
		}
		return auditRule(ctx, tx, s.now(), by, storage.AuditRuleAdded, out, nil, nr.Signed)
	})
	return out, err
}

// Update changes a run-time rule (never one of the file's:
// ErrRuleFromConfig), with its audit row.
func (s *RuleStore) Update(ctx context.Context, id string, p RulePatch, by string) (RuleInfo, error) {
	n, err := s.parseRuleID(id)
	if err != nil {
		return RuleInfo{}, err
	}
	var out RuleInfo
	err = s.db.InTx(ctx, func(tx storage.Querier) error {
		if err := storage.BumpVersion(ctx, tx, storage.RulesVersionTable); err != nil {
			return err
		}
		old, err := getRule(ctx, tx, n)
		if err != nil {
			return err
		}
		r := old.Rule()
		set := func(dst *string, v *string) {
			if v != nil {
				*dst = *v
			}
		}
		set(&r.Target, p.Target)
		set(&r.SenderID, p.SenderID)
		set(&r.Agent, p.Agent)
		set(&r.Channel, p.Channel)
		if p.Action != nil {
			r.Action = *p.Action
		}
		if err := firstProblem(CheckRule(r, s.known)); err != nil {
			return err
		}
		owner := r.Owner()
		pos := old.Position
		if owner != old.Owner || p.Position != nil {
			// Take it out of its place, then put it in the new one.
			if _, err := tx.ExecContext(ctx, closeRuleGap, old.Owner, old.Position); err != nil {
				return fmt.Errorf("update rule: %w", err)
			}
			count, err := countOwner(ctx, tx, owner, n)
			if err != nil {
				return err
			}
			var where Position
			if p.Position != nil {
				where = *p.Position
			}
			pos = where.place(count)
			if _, err := tx.ExecContext(ctx, makeRoomForMovedRule, owner, pos, n); err != nil {
				return fmt.Errorf("update rule: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, updateRule,
			owner, pos, r.Target, string(r.Action), r.SenderID, r.Agent, r.Channel, storage.FormatTime(s.now()), n); err != nil {
			return fmt.Errorf("update rule: %w", err)
		}
		if out, err = getRule(ctx, tx, n); err != nil {
			return err
		}
		return auditRule(ctx, tx, s.now(), by, storage.AuditRuleChanged, out, &old, nil)
	})
	return out, err
}

// Remove deletes a run-time rule (never one of the file's:
// ErrRuleFromConfig), with its audit row.
func (s *RuleStore) Remove(ctx context.Context, id, by string) error {
	return s.RemoveSigned(ctx, id, by, nil)
}

// RemoveSigned is Remove with signed added to its audit row (see
// NewRule.Signed).
func (s *RuleStore) RemoveSigned(ctx context.Context, id, by string, signed map[string]any) error {
	n, err := s.parseRuleID(id)
	if err != nil {
		return err
	}
	return s.db.InTx(ctx, func(tx storage.Querier) error {
		if err := storage.BumpVersion(ctx, tx, storage.RulesVersionTable); err != nil {
			return err
		}
		old, err := getRule(ctx, tx, n)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, deleteRule, n); err != nil {
			return fmt.Errorf("remove rule: %w", err)
		}
		if _, err := tx.ExecContext(ctx, closeRuleGap, old.Owner, old.Position); err != nil {
			return fmt.Errorf("remove rule: %w", err)
		}
		return auditRule(ctx, tx, s.now(), by, storage.AuditRuleRemoved, old, nil, signed)
	})
}

// Get returns one rule as List shows it (a run-time rule's position is
// among the run-time rules of its owner, which List keeps).
func (s *RuleStore) Get(ctx context.Context, id string) (RuleInfo, error) {
	n, err := s.parseRuleID(id)
	if errors.Is(err, ErrRuleFromConfig) {
		list, lerr := s.List(ctx)
		if lerr != nil {
			return RuleInfo{}, lerr
		}
		for _, ri := range list {
			if ri.ID == id {
				return ri, nil
			}
		}
	}
	if err != nil {
		return RuleInfo{}, err
	}
	return getRule(ctx, s.db, n)
}

func getRule(ctx context.Context, q storage.Querier, id int64) (RuleInfo, error) {
	ri, err := scanRule(q.QueryRowContext(ctx, selectRule, id))
	if errors.Is(err, sql.ErrNoRows) {
		return RuleInfo{}, fmt.Errorf("rule api:%d: %w", id, ErrNotFound)
	}
	if err != nil {
		return RuleInfo{}, fmt.Errorf("rule api:%d: %w", id, err)
	}
	return ri, nil
}

// countOwner counts the run-time rules of owner, not counting rule except.
func countOwner(ctx context.Context, q storage.Querier, owner string, except int64) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, countOwnRules, owner, except).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count rules: %w", err)
	}
	return n, nil
}
