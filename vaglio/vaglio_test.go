package vaglio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name          string
		threshold     float64
		req           Request
		wantApproved  bool
		wantBlockedBy string
		wantInReason  string
	}{
		{name: "harmless path approved", threshold: DefaultThreshold,
			req:          Request{Capability: "fs:read", Target: "/home/roberto/invoices/04.pdf", Executor: "fs_read", Intent: "read the invoice"},
			wantApproved: true, wantInReason: RuleJudgeKind},
		{name: "ssh key in target", threshold: DefaultThreshold,
			req:           Request{Capability: "fs:read", Target: "~/.ssh/id_rsa"},
			wantBlockedBy: BlockedByGuard, wantInReason: ".ssh"},
		{name: "passwd in nested arg", threshold: DefaultThreshold,
			req:           Request{Capability: "fs:read", Target: "/tmp/x", Args: map[string]any{"o": map[string]any{"p": []any{"/etc/passwd"}}}},
			wantBlockedBy: BlockedByGuard, wantInReason: "/etc/passwd"},
		{name: "credentials.env in target", threshold: DefaultThreshold,
			req:           Request{Capability: "fs:read", Target: "~/.config/metnos/credentials.env"},
			wantBlockedBy: BlockedByGuard, wantInReason: "credentials.env"},
		{name: "credentials.env in nested arg", threshold: DefaultThreshold,
			req:           Request{Capability: "fs:read", Target: "/tmp/x", Args: map[string]any{"o": []any{map[string]any{"p": "~/.config/metnos/credentials.env"}}}},
			wantBlockedBy: BlockedByGuard, wantInReason: "credentials.env"},
		{name: "rm -rf /", threshold: DefaultThreshold,
			req:           Request{Capability: "code:exec", Critical: true, Target: "rm -rf /"},
			wantBlockedBy: BlockedByGuard, wantInReason: "rm -rf /"},
		{name: "fork bomb", threshold: DefaultThreshold,
			req:           Request{Capability: "code:exec", Critical: true, Target: ":(){ :|:& };:"},
			wantBlockedBy: BlockedByGuard, wantInReason: "shell command"},
		{name: "ls -la /tmp passes", threshold: DefaultThreshold,
			req:          Request{Capability: "code:exec", Critical: true, Target: "ls -la /tmp", Executor: "shell_exec"},
			wantApproved: true},
		{name: "threshold 0.99 blocks", threshold: 0.99,
			req:           Request{Capability: "fs:read", Target: "/tmp/x"},
			wantBlockedBy: BlockedByJudge, wantInReason: "judge: score 0.70 < threshold 0.99 (rule-based-v1"},
		{name: "threshold 0 never blocks", threshold: 0,
			req:          Request{Capability: "fs:read", Critical: true, Target: "/tmp/x", Args: map[string]any{"a-b": "../x"}},
			wantApproved: true},
		{name: "invalid threshold falls back to the default", threshold: 7,
			req:          Request{Capability: "fs:read", Target: "/tmp/x"},
			wantApproved: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := New(Options{Threshold: tt.threshold, Home: testHome})
			got := v.Check(context.Background(), tt.req)
			if got.Approved != tt.wantApproved || got.BlockedBy != tt.wantBlockedBy {
				t.Fatalf("Check() = approved %v blocked_by %q (%s); want %v %q",
					got.Approved, got.BlockedBy, got.Reason, tt.wantApproved, tt.wantBlockedBy)
			}
			if !strings.Contains(got.Reason, tt.wantInReason) {
				t.Errorf("reason %q lacks %q", got.Reason, tt.wantInReason)
			}
			if got.JudgeKind != RuleJudgeKind {
				t.Errorf("judge_kind = %q, want %q", got.JudgeKind, RuleJudgeKind)
			}
			if got.Score < 0 || got.Score > 1 {
				t.Errorf("score %v outside [0,1]", got.Score)
			}
			if got.BlockedBy == BlockedByGuard && got.Score != 0 {
				t.Errorf("guard-blocked score = %v, want 0", got.Score)
			}
			if got.TS.IsZero() {
				t.Error("ts not set")
			}
		})
	}
}

func TestCheck_IntentNamingExecutorScoresHigher(t *testing.T) {
	v := New(Options{Threshold: DefaultThreshold, Home: testHome})
	base := Request{Capability: "fs:read", Target: "/tmp/report.pdf", Executor: "fs_read_file"}
	named, unnamed := base, base
	named.Intent = "read the monthly report"
	unnamed.Intent = "look at the monthly report"
	if a, b := v.Check(context.Background(), named).Score, v.Check(context.Background(), unnamed).Score; a <= b {
		t.Errorf("intent naming the executor scored %v, not above %v", a, b)
	}
}

func TestCheck_DotDotInArgScoresLower(t *testing.T) {
	v := New(Options{Threshold: DefaultThreshold, Home: testHome})
	clean := Request{Capability: "fs:read", Target: "/tmp/x", Args: map[string]any{"path": "/srv/data/a.csv"}}
	climb := Request{Capability: "fs:read", Target: "/tmp/x", Args: map[string]any{"path": "/srv/data/../data/a.csv"}}
	if a, b := v.Check(context.Background(), climb).Score, v.Check(context.Background(), clean).Score; a >= b {
		t.Errorf("'..' in an arg scored %v, not below %v", a, b)
	}
}

func TestCheck_JudgeFailureDenies(t *testing.T) {
	tests := []struct {
		name  string
		judge Judge
	}{
		{name: "error", judge: failingJudge{}},
		{name: "panic", judge: panickingJudge{}},
		{name: "NaN", judge: fixedJudge{score: math.NaN()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := New(Options{Threshold: DefaultThreshold, Home: testHome, Judge: tt.judge})
			got := v.Check(context.Background(), Request{Capability: "fs:read", Target: "/tmp/x"})
			if got.Approved || got.BlockedBy != BlockedByJudge || !strings.Contains(got.Reason, "failed") {
				t.Errorf("Check() = %+v; want denied by the judge, reason saying it failed", got)
			}
			if got.Score != 0 || got.JudgeKind != tt.judge.Kind() {
				t.Errorf("score %v judge_kind %q; want 0 %q", got.Score, got.JudgeKind, tt.judge.Kind())
			}
		})
	}
}

type failingJudge struct{}

func (failingJudge) Kind() string { return "failing" }
func (failingJudge) Score(context.Context, Request) (Judgement, error) {
	return Judgement{Score: 0.9}, errors.New("model unavailable")
}

type panickingJudge struct{}

func (panickingJudge) Kind() string { return "panicking" }
func (panickingJudge) Score(context.Context, Request) (Judgement, error) {
	panic("boom")
}

func TestCheck_Log(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vaglio")
	// 23:30 on 31 March in New York is already April in UTC.
	ny := time.FixedZone("EDT", -4*3600)
	now := time.Date(2026, 3, 31, 23, 30, 0, 0, ny)
	v := New(Options{Threshold: DefaultThreshold, LogDir: dir, Home: testHome, Now: func() time.Time { return now }})

	const secret = "sk-live-51H8xyzzySECRET"
	reqs := []Request{
		{Agent: "mailer", Capability: "net:post", Target: "https://api.example/charge?key=" + secret, Intent: "charge the card",
			Executor: "http_post", Args: map[string]any{"api_token": secret, "body": map[string]any{"amount": 12.5, "memo": secret}}},
		{Agent: "mailer", Capability: "fs:read", Target: "~/.ssh/id_rsa", Args: map[string]any{"note": secret}},
	}
	for _, r := range reqs {
		v.Check(context.Background(), r)
	}
	v.Flush()

	name := filepath.Join(dir, "2026-04.jsonl")
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatalf("read log: %v", err)
	}
	if bytes.Contains(data, []byte("SECRET")) {
		t.Errorf("log holds an arg value:\n%s", data)
	}
	if bytes.Contains(data, []byte("id_rsa")) || bytes.Contains(data, []byte("api.example")) {
		t.Errorf("log holds a target:\n%s", data)
	}
	for _, want := range []string{`"args_keys":["api_token","body"]`, `"body.amount"`, `"body.memo"`, `"intent":"charge the card"`, `"executor":"http_post"`} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("log lacks %s:\n%s", want, data)
		}
	}

	var lines []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	if len(lines) != len(reqs) {
		t.Fatalf("%d lines, want %d", len(lines), len(reqs))
	}
	for _, key := range []string{"ts", "agent", "capability", "executor", "intent", "args_keys", "context_keys", "arg_key_paths", "approved", "score", "reason", "judge_kind", "blocked_by"} {
		if _, ok := lines[0][key]; !ok {
			t.Errorf("line lacks %q: %v", key, lines[0])
		}
	}
	if lines[1]["blocked_by"] != BlockedByGuard || lines[1]["approved"] != false {
		t.Errorf("second line = %v, want a guard block", lines[1])
	}

	assertMode(t, dir, 0o700)
	assertMode(t, name, 0o600)
}

func assertMode(t *testing.T, name string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s mode = %v, want %v", name, got, want)
	}
}

func TestCheck_LogConcurrent(t *testing.T) {
	dir := t.TempDir()
	v := New(Options{Threshold: DefaultThreshold, LogDir: dir, Home: testHome,
		Now: func() time.Time { return time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC) }})
	const n = 50
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			v.Check(context.Background(), Request{Capability: "fs:read", Target: "/tmp/x", Intent: strings.Repeat("x", 5000)})
		})
	}
	wg.Wait()
	v.Flush()
	data, err := os.ReadFile(filepath.Join(dir, "2026-01.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for line := range bytes.Lines(data) {
		if !json.Valid(line) {
			t.Fatalf("interleaved or broken line: %.80q", line)
		}
		got++
	}
	if got != n {
		t.Errorf("%d lines, want %d", got, n)
	}
}

func TestCheck_LogDirUnwritable(t *testing.T) {
	// A regular file where the directory should be: fails even for root.
	blocker := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	v := New(Options{Threshold: DefaultThreshold, LogDir: filepath.Join(blocker, "vaglio"), Home: testHome,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})

	done := make(chan Verdict, 1)
	go func() {
		done <- v.Check(context.Background(), Request{Capability: "fs:read", Target: "/tmp/x", Args: map[string]any{"token": "hunter2-SECRET"}})
	}()
	select {
	case got := <-done:
		if !got.Approved {
			t.Errorf("Check() = %+v; a log failure must not change the verdict", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Check blocked on an unwritable log")
	}
	v.Flush()
	if !strings.Contains(logs.String(), "write decision log") {
		t.Errorf("the failure was not logged: %q", logs.String())
	}
	if strings.Contains(logs.String(), "SECRET") {
		t.Errorf("the failure log holds an arg value: %q", logs.String())
	}
}

func TestNew_LogDirTilde(t *testing.T) {
	home := t.TempDir()
	v := New(Options{Threshold: DefaultThreshold, LogDir: "~/.local/share/metnos/vaglio", Home: home,
		Now: func() time.Time { return time.Date(2026, 12, 31, 23, 59, 0, 0, time.UTC) }})
	v.Check(context.Background(), Request{Capability: "fs:read", Target: "/tmp/x"})
	v.Close()
	if _, err := os.Stat(filepath.Join(home, ".local/share/metnos/vaglio/2026-12.jsonl")); err != nil {
		t.Errorf("log not under the expanded home: %v", err)
	}
}

// TestCheck_LogBuffered: lines are written without an explicit flush soon
// after the check (logFlushEvery), all of them and in order, and Close
// writes what is still waiting.
func TestCheck_LogBuffered(t *testing.T) {
	dir := t.TempDir()
	v := New(Options{Threshold: DefaultThreshold, LogDir: dir, Home: testHome,
		Now: func() time.Time { return time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC) }})
	name := filepath.Join(dir, "2026-01.jsonl")
	count := func() int {
		data, _ := os.ReadFile(name)
		return bytes.Count(data, []byte("\n"))
	}
	for i := range 3 {
		v.Check(context.Background(), Request{Capability: "fs:read", Target: "/tmp/x", Intent: fmt.Sprint("line ", i)})
	}
	deadline := time.Now().Add(5 * time.Second)
	for count() < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := count(); got != 3 {
		t.Fatalf("%d lines written without a flush, want 3", got)
	}
	v.Check(context.Background(), Request{Capability: "fs:read", Target: "/tmp/x", Intent: "last"})
	v.Close()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "line 0") || !strings.Contains(lines[3], `"last"`) {
		t.Fatalf("after Close: %d lines, want 4 in order:\n%s", len(lines), data)
	}
	v.Check(context.Background(), Request{Capability: "fs:read", Target: "/tmp/x", Intent: "after close"})
	if data, _ := os.ReadFile(name); !bytes.Contains(data, []byte("after close")) {
		t.Fatal("a check after Close was not written at once")
	}
}

// TestCheck_LogSeedRecord: each line starts with the seed's ten fields
// (vaglio v1.1 §6), in its order, with its types: ts and score floats,
// blocked_by null when approved, args_keys and context_keys lists of
// names. Extras follow.
func TestCheck_LogSeedRecord(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 4, 27, 18, 31, 3, 214_000_000, time.UTC)
	v := New(Options{Threshold: DefaultThreshold, LogDir: dir, Home: testHome, Now: func() time.Time { return now }})
	v.Check(context.Background(), Request{Agent: "metnos", Capability: "fs:read", Executor: "fs_read", Intent: "read my notes in /tmp/n.txt",
		Target: "/tmp/n.txt", Args: map[string]any{"path": "/tmp/n.txt"}, Context: map[string]any{"mode": "multistep", "step": 2.0}})
	v.Check(context.Background(), Request{Agent: "metnos", Capability: "fs:read", Executor: "fs_read", Intent: "read the key",
		Args: map[string]any{"path": "~/.ssh/id_rsa"}, Context: map[string]any{"mode": "multistep", "step": 3.0}})
	v.Flush()
	data, err := os.ReadFile(filepath.Join(dir, "2026-04.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines:\n%s", len(lines), data)
	}
	seed := []string{"approved", "reason", "ts", "judge_kind", "score", "blocked_by", "intent", "executor", "args_keys", "context_keys"}
	for i, line := range lines {
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			t.Fatalf("line %d: %v %v", i, tok, err)
		}
		var keys []string
		vals := map[string]any{}
		for dec.More() {
			k, _ := dec.Token()
			var val any
			if err := dec.Decode(&val); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k.(string))
			vals[k.(string)] = val
		}
		if len(keys) < len(seed) || !slices.Equal(keys[:len(seed)], seed) {
			t.Errorf("line %d keys %v, want the seed's %v first", i, keys, seed)
		}
		for _, k := range []string{"ts", "score"} {
			n, ok := vals[k].(json.Number)
			if !ok || !strings.Contains(n.String(), ".") {
				t.Errorf("line %d %s = %#v, want a float", i, k, vals[k])
			}
		}
		if ts, _ := vals["ts"].(json.Number).Float64(); ts != 1777314663.214 {
			t.Errorf("ts = %v, want 1777314663.214", vals["ts"])
		}
		for _, k := range []string{"reason", "judge_kind", "intent", "executor"} {
			if _, ok := vals[k].(string); !ok {
				t.Errorf("line %d %s = %#v, want a string", i, k, vals[k])
			}
		}
		if !reflect.DeepEqual(vals["args_keys"], []any{"path"}) {
			t.Errorf("args_keys = %#v", vals["args_keys"])
		}
		if !reflect.DeepEqual(vals["context_keys"], []any{"agent", "capability", "mode", "step"}) {
			t.Errorf("context_keys = %#v", vals["context_keys"])
		}
	}
	var first, second map[string]any
	json.Unmarshal([]byte(lines[0]), &first)
	json.Unmarshal([]byte(lines[1]), &second)
	if first["approved"] != true || first["blocked_by"] != nil || first["score"] != 0.8 ||
		first["reason"] != "approved: score 0.80 (rule-based-v1: base 0.70; +0.10 intent names the executor)" {
		t.Errorf("first line %v", first)
	}
	if second["approved"] != false || second["blocked_by"] != "guard" || second["score"] != 0.0 ||
		!strings.HasPrefix(second["reason"].(string), "guard: forbidden path .ssh in args.path") {
		t.Errorf("second line %v", second)
	}
	if strings.Contains(string(data), "id_rsa") || strings.Contains(string(data), "multistep") {
		t.Errorf("log holds a value:\n%s", data)
	}
}

// TestCheck_SeedExamples: the two examples of the seed's §4, through the
// guard and the judge, come out as the seed says.
func TestCheck_SeedExamples(t *testing.T) {
	v := New(Options{Threshold: DefaultThreshold, Home: testHome})
	got := v.Check(context.Background(), Request{Capability: "fs:read", Executor: "fs_read", Intent: "read my notes in /tmp/n.txt",
		Target: "/tmp/n.txt", Args: map[string]any{"path": "/tmp/n.txt"}})
	if !got.Approved || got.Score != 0.80 || !strings.HasPrefix(got.Reason, "approved: score 0.80 (") || !strings.Contains(got.Reason, "intent names the executor") {
		t.Errorf("harmless path: %+v", got)
	}
	got = v.Check(context.Background(), Request{Capability: "fs:read", Executor: "fs_read", Intent: "look at foo",
		Target: "/tmp/foo", Args: map[string]any{"path": "/tmp/../etc/foo"}})
	if !got.Approved || got.Score != 0.50 || !strings.Contains(got.Reason, "possible path traversal") {
		t.Errorf("path traversal: %+v", got)
	}
}
