// Package vaglio is the last check on a request that policy did not deny
// (SPEC §4 step 6): a binary guard for forbidden paths and destructive shell
// commands, then a graded judge, and a JSONL decision log that records the
// keys of args but never their values.
//
// Vaglio only ever takes away: a guard hit, a low score or a failing judge
// denies; nothing here turns a denied request into an allowed one.
package vaglio

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/metnos/gateway/internal/jsonw"
	"github.com/metnos/gateway/telemetry"
)

// Request is what vaglio looks at: the fields of an approval request that
// say what will be done and why. Args holds arbitrary JSON values; vaglio
// reads every string in them but logs only their keys.
type Request struct {
	Agent      string
	Capability string // e.g. "code:exec", "fs:read"
	Critical   bool   // from the capability registry
	Target     string
	// Host and Port are, for a host target (network:http), the host it
	// reaches in canonical form and its port ("" when it names none), as
	// policy read them (policy.ParseHost); empty for other targets.
	Host, Port string
	// Addrs are the canonical addresses Host resolves to, when policy
	// looked them up (see NeedsAddrs); each is judged as Host is.
	Addrs    []string
	Intent   string
	Executor string
	Args     map[string]any
	// Home is the agent's home directory when known (an [[agents]] home,
	// or the environment of the hook that asked), else "": "~" is then
	// read as both it and the gateway's own home, and a search of either
	// tree asks.
	Home string
	// Context is what the request declares about itself, the seed's
	// context dictionary (mode, step, critical, …): the rule-based judge
	// reads "critical", the log records the keys, never the values.
	Context map[string]any

	// facts are argSignals of Args when Check gathered them on the
	// guard's walk (facts.set); else the judge reads the args itself.
	facts argFacts
}

// Verdict is vaglio's answer. Its JSON names are part of the HTTP API
// (the "vaglio" object of a request) and of the decision log.
type Verdict struct {
	Approved bool      `json:"approved"`
	Reason   string    `json:"reason"`
	TS       time.Time `json:"ts"`
	// JudgeKind is the judge that gave the score: the configured one, or
	// rule-based-v1 when the LLM judge could not answer. When the guard
	// blocked first it names the configured judge, so a log line always
	// says which judge was in charge.
	JudgeKind string `json:"judge_kind"`
	// Score is in [0,1]. It is 0 when the guard blocked (the judge is then
	// not consulted: a guard hit is final, and a future LLM judge should
	// neither cost a call nor see args the guard refused) and when the
	// judge failed.
	Score     float64 `json:"score"`
	BlockedBy string  `json:"blocked_by,omitempty"` // BlockedByGuard, BlockedByJudge or ""
	// Factors are the judge's Judgement.Factors (FactorJudgeFailed when it
	// failed): what a card says in plain words. Absent when the guard
	// blocked, or the judge names none (the LLM judge).
	Factors []string `json:"factors,omitempty"`
	// Unscored is the judge's Judgement.Unscored: why the configured judge
	// did not score it (a request policy would allow then goes to a
	// person). Not part of the JSON: it acts on the decision only.
	Unscored string `json:"-"`
}

// AppendJSON appends v as encoding/json writes it (see internal/jsonw).
func (v *Verdict) AppendJSON(b []byte) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	b = append(b, '{')
	b = jsonw.Key(b, "approved", true)
	b = jsonw.Bool(b, v.Approved)
	b = jsonw.Key(b, "reason", false)
	b = jsonw.String(b, v.Reason)
	b = jsonw.Key(b, "ts", false)
	b = jsonw.Time(b, v.TS)
	b = jsonw.Key(b, "judge_kind", false)
	b = jsonw.String(b, v.JudgeKind)
	b = jsonw.Key(b, "score", false)
	b = jsonw.Float(b, v.Score)
	if v.BlockedBy != "" {
		b = jsonw.Key(b, "blocked_by", false)
		b = jsonw.String(b, v.BlockedBy)
	}
	if len(v.Factors) > 0 {
		b = jsonw.Key(b, "factors", false)
		b = jsonw.Strings(b, v.Factors)
	}
	return append(b, '}')
}

// The values of Verdict.BlockedBy; the HTTP API reports them unchanged.
const (
	BlockedByGuard = "guard"
	BlockedByJudge = "judge"
)

// DefaultThreshold is the default of vaglio.judge_threshold: a judge score
// below it denies the request.
const DefaultThreshold = 0.30

// Options configures New. The zero value is usable (no log, RuleJudge,
// threshold 0).
type Options struct {
	// Threshold is the configured vaglio.judge_threshold, used as given:
	// 0 is a valid setting (the judge grades but never refuses), so 0 does
	// not mean "default"; the config package supplies DefaultThreshold.
	// A value outside [0,1] or NaN cannot come from a validated config and
	// is replaced by DefaultThreshold, with a warning on Logger.
	Threshold float64
	// LogDir is where the monthly decision logs go; "" means no log. A
	// leading "~" is expanded with Home.
	LogDir string
	// Judge scores requests the guard let through; nil means RuleJudge{}.
	Judge Judge
	// Home is what "~" and $HOME stand for; "" means os.UserHomeDir().
	Home string
	// Now is the clock, injected so tests choose the month; nil means time.Now.
	Now func() time.Time
	// Logger receives log write failures (never argument values); nil
	// discards them.
	Logger *slog.Logger
	// Own is what the gateway guards of itself (its files and addresses);
	// SetOwn replaces it once the listening address is known.
	Own Own
}

// Vaglio runs the guard and the judge and keeps the decision log. It is safe
// for concurrent use: everything but the log file is read-only after New,
// and log writes are serialised by a mutex so lines never interleave.
type Vaglio struct {
	threshold float64
	logDir    string
	judge     Judge
	home      string
	// cleanHome is cleanHome(home), for the guard: cleaned once.
	cleanHome string
	now       func() time.Time
	logger    *slog.Logger

	logs *logWriter // the decision log, buffered (see logwriter.go)
	own  atomic.Pointer[ownRules]
}

// New builds a Vaglio from o, filling in the defaults documented on Options.
// It does no I/O beyond looking up the home directory: the log directory is
// created on the first write, so a bad log_dir never stops the gateway.
func New(o Options) *Vaglio {
	v := &Vaglio{
		threshold: o.Threshold,
		judge:     o.Judge,
		home:      o.Home,
		now:       o.Now,
		logger:    o.Logger,
	}
	if v.logger == nil {
		v.logger = slog.New(slog.DiscardHandler)
	}
	if v.judge == nil {
		v.judge = RuleJudge{}
	}
	if v.now == nil {
		v.now = time.Now
	}
	if v.home == "" {
		if h, err := os.UserHomeDir(); err == nil {
			v.home = h
		}
	}
	if math.IsNaN(v.threshold) || v.threshold < 0 || v.threshold > 1 {
		v.logger.Warn("vaglio: judge threshold outside [0,1], using the default",
			"threshold", v.threshold, "default", DefaultThreshold)
		v.threshold = DefaultThreshold
	}
	v.cleanHome = cleanHome(v.home)
	v.logDir = o.LogDir
	if v.home != "" && (v.logDir == "~" || strings.HasPrefix(v.logDir, "~/")) {
		v.logDir = filepath.Join(v.home, v.logDir[1:])
	}
	v.SetOwn(o.Own)
	v.logs = &logWriter{dir: v.logDir, onErr: func(err error) {
		v.logger.Warn("vaglio: write decision log", "error", err)
	}}
	return v
}

// SetOwn replaces what the gateway guards of itself: the server calls it
// once it listens, when the port is known. Safe for concurrent use.
func (v *Vaglio) SetOwn(o Own) { v.own.Store(compileOwn(o, v.home)) }

// MustAsk says whether a request must be put to a person even where the
// autonomy table allows it, and why. always means nothing but a person
// may allow it (no approve rule, no grant, no Allow always): fs:write on
// a persistence point (~/.bashrc, cron, .git/hooks/), which is code
// execution. Otherwise (always false) an fs:* request whose tree holds a
// forbidden path (a search or listing of /etc or ~) asks, and a rule or a
// grant may still allow it.
func (v *Vaglio) MustAsk(r Request) (reason string, always bool) {
	if !strings.HasPrefix(r.Capability, "fs:") {
		return "", false
	}
	homes := v.homes(r)
	if r.Capability == "fs:write" {
		for i, h := range homes {
			if i > 0 && h == "" {
				break
			}
			if rule, hit := PersistencePoint(expandTilde(r.Target, h)); hit {
				return "writes a persistence point (" + rule + "), code that runs later: a person decides every time", true
			}
		}
	}
	for i, h := range homes {
		if i > 0 && h == "" {
			break
		}
		if rule, hit := holdsForbidden(r.Target, h, v.own.Load()); hit {
			return "the tree searched or listed holds a forbidden path (" + rule + ")", false
		}
	}
	return "", false
}

// NeedsAddrs says whether a network:http request for port ("" for none)
// needs the addresses its host name resolves to, for the guard to tell
// whether it reaches the gateway (policy.AddrNeeder).
func (v *Vaglio) NeedsAddrs(port string) bool { return v.own.Load().needsAddrs(port) }

// Close writes the decision log lines still buffered and closes the log
// file. Checks after Close still log, each line written at once.
func (v *Vaglio) Close() error {
	v.logs.close()
	return nil
}

// Flush writes the decision log lines still buffered.
func (v *Vaglio) Flush() { v.logs.flush() }

// Check runs the guard, then (if the guard let the request through) the
// judge, and appends one line to the decision log. It always returns a
// verdict: a judge that errors or panics denies (fail closed), and a log
// that cannot be written is reported on the Logger, never to the caller.
func (v *Vaglio) Check(ctx context.Context, r Request) Verdict {
	ctx, span := telemetry.Start(ctx, "vaglio")
	defer span.End()
	verdict := Verdict{TS: v.now().UTC(), JudgeKind: v.judge.Kind()}
	// The guard's walk of the args also gathers what rule-based-v1
	// reads of them: the judge then walks them no second time.
	if blocked, reason, facts := v.guardAll(r); blocked {
		verdict.Reason, verdict.BlockedBy = reason, BlockedByGuard
	} else if j, err := v.judged(ctx, r.withFacts(facts)); err != nil {
		verdict.Reason, verdict.BlockedBy = fmt.Sprintf("judge: %s failed, denied: %v", verdict.JudgeKind, err), BlockedByJudge
		verdict.Factors = []string{FactorJudgeFailed}
	} else {
		verdict.Score, verdict.Factors, verdict.Unscored = j.Score, j.Factors, j.Unscored
		if j.Kind != "" {
			verdict.JudgeKind = j.Kind
		}
		// The seed's wording: "judge: score 0.20 < threshold 0.30 (…)",
		// "approved: score 0.80 (…)".
		if j.Score < v.threshold {
			verdict.Reason = fmt.Sprintf("judge: score %.2f < threshold %.2f (%s)", j.Score, v.threshold, j.Reason)
			verdict.BlockedBy = BlockedByJudge
		} else {
			verdict.Approved, verdict.Reason = true, approvedReason(j.Score, j.Reason)
		}
	}
	v.log(r, verdict)
	if verdict.BlockedBy != "" {
		span.String(telemetry.KeyBlockedBy, verdict.BlockedBy)
	}
	return verdict
}

// approvedReason is "approved: score 0.80 (reason)"; rule-based-v1's
// are written once (ruleNotes.approved).
func approvedReason(score float64, reason string) string {
	if a, ok := ruleNotes.approved[reason]; ok && a.score == score {
		return a.text
	}
	return writeApproved(score, reason)
}

func writeApproved(score float64, reason string) string {
	// fmt's %.2f is strconv's 'f' with precision 2.
	var b strings.Builder
	b.Grow(len("approved: score 0.00 ()") + len(reason))
	var num [8]byte
	b.WriteString("approved: score ")
	b.Write(strconv.AppendFloat(num[:0], score, 'f', 2, 64))
	b.WriteString(" (")
	b.WriteString(reason)
	b.WriteString(")")
	return b.String()
}

// judged is score, in a span of its own when the judge is not the
// rule-based one (a model's call, which may take seconds); the
// rule-based judge takes microseconds and its score is on the vaglio span.
func (v *Vaglio) judged(ctx context.Context, r Request) (Judgement, error) {
	span := telemetry.SpanOf(ctx)
	if v.judge.Kind() != RuleJudgeKind {
		ctx, span = telemetry.Start(ctx, "vaglio.judge")
		defer span.End()
	}
	span.String(telemetry.KeyJudgeKind, v.judge.Kind())
	j, err := v.score(ctx, r)
	if err != nil {
		span.Fail("judge failed")
	} else {
		span.Float(telemetry.KeyJudgeScore, j.Score)
	}
	return j, err
}

// guardAll is the guard with each of the request's homes; unless it
// blocks, facts are argSignals of r's args, read on its first walk.
func (v *Vaglio) guardAll(r Request) (blocked bool, reason string, facts argFacts) {
	own := v.own.Load()
	for i, h := range v.homes(r) {
		if i > 0 && h == "" {
			break
		}
		var f argFacts
		// The first home is v.home (see homes), cleaned once in New;
		// the second is clean as homes gives it.
		if i == 0 {
			h = v.cleanHome
		}
		if blocked, reason, f = guard(r, h, own, i == 0); blocked {
			return true, reason, argFacts{}
		}
		if i == 0 {
			facts = f
		}
	}
	return false, "", facts
}

// score calls the judge, turning a panic or a NaN into an error so that
// Check fails closed, and clamping the score to [0,1].
func (v *Vaglio) score(ctx context.Context, r Request) (j Judgement, err error) {
	defer func() {
		if p := recover(); p != nil {
			j, err = Judgement{}, fmt.Errorf("judge panicked: %v", p)
		}
	}()
	j, err = v.judge.Score(ctx, r)
	if err != nil {
		return Judgement{}, err
	}
	if math.IsNaN(j.Score) {
		return Judgement{}, fmt.Errorf("judge returned NaN")
	}
	j.Score = clampScore(j.Score)
	return j, nil
}

// logLine is one line of the decision log: the seed's record (vaglio v1.1
// §6) with its names and types, so tools written for the seed's logs read
// these, then extras. It deliberately has no target and no arg or context
// values: a target can be a path or a command holding secrets, and SPEC §4
// step 6 allows only the keys of args.
type logLine struct {
	Approved    bool     `json:"approved"`
	Reason      string   `json:"reason"`
	TS          pyFloat  `json:"ts"` // Unix seconds
	JudgeKind   string   `json:"judge_kind"`
	Score       pyFloat  `json:"score"`
	BlockedBy   *string  `json:"blocked_by"` // null when approved
	Intent      string   `json:"intent"`
	Executor    string   `json:"executor"`
	ArgsKeys    []string `json:"args_keys"`    // top-level keys, sorted
	ContextKeys []string `json:"context_keys"` // agent, capability and the request's context keys

	// Extras, after the seed's fields.
	Agent       string   `json:"agent"`
	Capability  string   `json:"capability"`
	ArgKeyPaths []string `json:"arg_key_paths"` // nested keys too: a.b, items[].name
}

// unixSeconds is t as the seed's ts: Unix seconds with the fraction, to the
// microsecond.
func unixSeconds(t time.Time) pyFloat {
	return pyFloat(float64(t.UnixMicro()) / 1e6)
}

// pyFloat is a float64 that always reads back as a float in Python (0.0 and
// 1714225863.0, never 0 or 1714225863), as the seed's ts and score do.
type pyFloat float64

// MarshalJSON writes the shortest decimal form, with ".0" when it has no
// fraction. Scores and times are finite.
func (f pyFloat) MarshalJSON() ([]byte, error) {
	b := strconv.AppendFloat(nil, float64(f), 'f', -1, 64)
	if !bytes.ContainsRune(b, '.') {
		b = append(b, '.', '0')
	}
	return b, nil
}

// logFileMode and logDirMode keep the decision log private to the gateway's
// user: intents can say more than their owner would like to share.
const (
	logDirMode  = 0o700
	logFileMode = 0o600
)

// log appends the decision to <LogDir>/YYYY-MM.jsonl (UTC month). Failures
// are reported on the Logger and otherwise ignored: the log never blocks a
// decision.
func (v *Vaglio) log(r Request, verdict Verdict) {
	if v.logDir == "" {
		return
	}
	k := logKeysPool.Get().(*logKeys)
	defer k.release()
	rec := logLine{
		Approved:    verdict.Approved,
		Reason:      verdict.Reason,
		TS:          unixSeconds(verdict.TS),
		JudgeKind:   verdict.JudgeKind,
		Score:       pyFloat(verdict.Score),
		Intent:      r.Intent,
		Executor:    r.Executor,
		ArgsKeys:    k.topKeys(r.Args),
		ContextKeys: k.contextKeys(r),
		Agent:       r.Agent,
		Capability:  r.Capability,
		ArgKeyPaths: k.argKeys(r.Args),
	}
	if verdict.BlockedBy != "" {
		rec.BlockedBy = &verdict.BlockedBy
	}
	k.line = append(rec.appendTo(k.line[:0]), '\n')
	v.logs.add(v.logs.nameFor(verdict.TS), k.line)
}
