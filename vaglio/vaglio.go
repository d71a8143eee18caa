// Package vaglio is the last check on a request that policy did not deny
// (SPEC §4 step 6): a binary guard for forbidden paths and destructive shell
// commands, then a graded judge, and a JSONL decision log that records the
// keys of args but never their values.
//
// Vaglio only ever takes away: a guard hit, a low score or a failing judge
// denies; nothing here turns a denied request into an allowed one.
package vaglio

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Request is what vaglio looks at: the fields of an approval request that
// say what will be done and why. Args holds arbitrary JSON values; vaglio
// reads every string in them but logs only their keys.
type Request struct {
	Agent      string
	Capability string // e.g. "code:exec", "fs:read"
	Critical   bool   // from the capability registry
	Target     string
	Intent     string
	Executor   string
	Args       map[string]any
}

// Verdict is vaglio's answer. Its JSON names are part of the HTTP API
// (the "vaglio" object of a request) and of the decision log.
type Verdict struct {
	Approved bool      `json:"approved"`
	Reason   string    `json:"reason"`
	TS       time.Time `json:"ts"`
	// JudgeKind names the configured judge even when the guard blocked
	// first, so a log line always says which judge was in charge.
	JudgeKind string `json:"judge_kind"`
	// Score is in [0,1]. It is 0 when the guard blocked (the judge is then
	// not consulted: a guard hit is final, and a future LLM judge should
	// neither cost a call nor see args the guard refused) and when the
	// judge failed.
	Score     float64 `json:"score"`
	BlockedBy string  `json:"blocked_by,omitempty"` // BlockedByGuard, BlockedByJudge or ""
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
}

// Vaglio runs the guard and the judge and keeps the decision log. It is safe
// for concurrent use: everything but the log file is read-only after New,
// and log writes are serialised by a mutex so lines never interleave.
type Vaglio struct {
	threshold float64
	logDir    string
	judge     Judge
	home      string
	now       func() time.Time
	logger    *slog.Logger

	logs *logWriter // the decision log, buffered (see logwriter.go)
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
	v.logDir = o.LogDir
	if v.home != "" && (v.logDir == "~" || strings.HasPrefix(v.logDir, "~/")) {
		v.logDir = filepath.Join(v.home, v.logDir[1:])
	}
	v.logs = &logWriter{dir: v.logDir, onErr: func(err error) {
		v.logger.Warn("vaglio: write decision log", "error", err)
	}}
	return v
}

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
	verdict := Verdict{TS: v.now().UTC(), JudgeKind: v.judge.Kind()}
	if blocked, reason := Guard(r, v.home); blocked {
		verdict.Reason, verdict.BlockedBy = reason, BlockedByGuard
	} else if score, reason, err := v.score(ctx, r); err != nil {
		verdict.Reason, verdict.BlockedBy = fmt.Sprintf("judge %s failed, denied: %v", verdict.JudgeKind, err), BlockedByJudge
	} else {
		verdict.Score = score
		if score < v.threshold {
			verdict.Reason = fmt.Sprintf("judge: score %.2f below threshold %.2f (%s)", score, v.threshold, reason)
			verdict.BlockedBy = BlockedByJudge
		} else {
			verdict.Approved, verdict.Reason = true, reason
		}
	}
	v.log(r, verdict)
	return verdict
}

// score calls the judge, turning a panic or a NaN into an error so that
// Check fails closed, and clamping the score to [0,1].
func (v *Vaglio) score(ctx context.Context, r Request) (score float64, reason string, err error) {
	defer func() {
		if p := recover(); p != nil {
			score, reason, err = 0, "", fmt.Errorf("judge panicked: %v", p)
		}
	}()
	score, reason, err = v.judge.Score(ctx, r)
	if err != nil {
		return 0, "", err
	}
	if math.IsNaN(score) {
		return 0, "", fmt.Errorf("judge returned NaN")
	}
	return clampScore(score), reason, nil
}

// logLine is one line of the decision log. It deliberately has no target
// and no arg values: a target can be a path or a command holding secrets,
// and SPEC §4 step 6 allows only the keys of args.
type logLine struct {
	TS         time.Time `json:"ts"`
	Agent      string    `json:"agent"`
	Capability string    `json:"capability"`
	Executor   string    `json:"executor"`
	Intent     string    `json:"intent"`
	ArgKeys    []string  `json:"arg_keys"`
	Approved   bool      `json:"approved"`
	Score      float64   `json:"score"`
	Reason     string    `json:"reason"`
	BlockedBy  string    `json:"blocked_by,omitempty"`
	JudgeKind  string    `json:"judge_kind"`
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
	line, err := json.Marshal(logLine{
		TS:         verdict.TS,
		Agent:      r.Agent,
		Capability: r.Capability,
		Executor:   r.Executor,
		Intent:     r.Intent,
		ArgKeys:    argKeys(r.Args),
		Approved:   verdict.Approved,
		Score:      verdict.Score,
		Reason:     verdict.Reason,
		BlockedBy:  verdict.BlockedBy,
		JudgeKind:  verdict.JudgeKind,
	})
	if err != nil {
		v.logger.Warn("vaglio: encode decision log line", "error", err, "agent", r.Agent, "capability", r.Capability)
		return
	}
	line = append(line, '\n')
	v.logs.add(logName(v.logDir, verdict.TS), line)
}
