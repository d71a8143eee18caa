package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/storage/storagetest"
)

// auditLine is one jsonl row as an exporter reads it.
type auditJSONL struct {
	Seq       int64           `json:"seq"`
	At        string          `json:"at"`
	Actor     string          `json:"actor"`
	Event     string          `json:"event"`
	RequestID *string         `json:"request_id"`
	GrantID   *int64          `json:"grant_id"`
	Detail    json.RawMessage `json:"detail"`
	Hash      string          `json:"hash"`
}

func parseJSONL(t *testing.T, out string) []auditJSONL {
	t.Helper()
	var rows []auditJSONL
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r auditJSONL
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("jsonl line %q: %v", sc.Text(), err)
		}
		rows = append(rows, r)
	}
	return rows
}

// apiAudit reads every page of GET /v1/audit with query and page size.
func apiAudit(t *testing.T, g *liveGateway, query string, limit int) []auditJSONL {
	t.Helper()
	var all []auditJSONL
	after := int64(0)
	for {
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s/v1/audit?%s&limit=%d&after=%d", g.URL, query, limit, after), nil)
		req.Header.Set("Authorization", "Bearer "+liveAdminToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Events []auditJSONL `json:"events"`
			Next   *int64       `json:"next"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /v1/audit?%s: %d %v", query, resp.StatusCode, err)
		}
		all = append(all, page.Events...)
		if page.Next == nil {
			return all
		}
		after = *page.Next
	}
}

// auditEnv is the environment of a CLI run on g's database.
func auditEnv(t *testing.T, g *liveGateway) func(string) string {
	vars := map[string]string{"HOME": t.TempDir(), "METNOS_GRANTS_DB": g.App.Config.Storage.Path}
	return func(k string) string { return vars[k] }
}

// liveTraffic makes a few requests of two agents and decides some.
func liveTraffic(t *testing.T, g *liveGateway) {
	t.Helper()
	ctx := context.Background()
	a1 := client.New(g.URL, liveAgentToken)
	for i := range 6 {
		r, err := a1.Request(ctx, client.Req{CallID: fmt.Sprintf("t%d", i), Capability: "fs:read",
			Target: fmt.Sprintf("/srv/t/%d.txt", i)}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if _, err := g.Admin.Decide(ctx, r.ID, client.AllowOnce); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 3 {
		if _, err := g.Admin.Request(ctx, client.Req{CallID: fmt.Sprintf("adm%d", i), Capability: "llm:local"}, 0); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAuditCLI_AgreesWithAPI: for the same filters the CLI (on the
// database) and GET /v1/audit (through the server, in pages) give the same
// rows, hashes included, and the CLI's --after/--limit pages equal the API's.
func TestAuditCLI_AgreesWithAPI(t *testing.T) {
	g := startLive(t, nil)
	liveTraffic(t, g)
	env := auditEnv(t, g)
	ctx := context.Background()
	cases := []struct {
		name string
		cli  []string
		api  string
	}{
		{"everything", nil, ""},
		{"agent", []string{"--agent", "a1"}, "agent=a1"},
		{"event", []string{"--event", "decision"}, "event=decision"},
		{"actor", []string{"--actor", "admin"}, "actor=admin"},
		{"capability", []string{"--capability", "llm:local"}, "capability=llm:local"},
		{"since", []string{"--since", "1h"}, "since=1h"},
		{"until in the past", []string{"--until", "2020-01-01"}, "until=2020-01-01"},
		{"agent and event", []string{"--agent", "a1", "--event", "outcome"}, "agent=a1&event=outcome"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := runCLI(ctx, env, "", append([]string{"audit", "--format", "jsonl"}, tc.cli...)...)
			if res.code != 0 {
				t.Fatalf("exit %d: %s", res.code, res.stderr)
			}
			cli := parseJSONL(t, res.stdout)
			api := apiAudit(t, g, tc.api, 2)
			if len(cli) != len(api) {
				t.Fatalf("CLI %d rows, API %d", len(cli), len(api))
			}
			for i := range cli {
				if cli[i].Seq != api[i].Seq || cli[i].Hash != api[i].Hash || string(cli[i].Detail) != string(api[i].Detail) {
					t.Fatalf("row %d: CLI %+v, API %+v", i, cli[i], api[i])
				}
			}
			if tc.name != "until in the past" && len(cli) == 0 {
				t.Fatal("no rows: the case tests nothing")
			}
		})
	}
	t.Run("pages", func(t *testing.T) {
		api := apiAudit(t, g, "agent=a1", 4)
		var cli []auditJSONL
		after := "0"
		for {
			res := runCLI(ctx, env, "", "audit", "--format", "jsonl", "--agent", "a1", "--limit", "4", "--after", after)
			page := parseJSONL(t, res.stdout)
			cli = append(cli, page...)
			if len(page) < 4 {
				break
			}
			after = fmt.Sprint(page[len(page)-1].Seq)
		}
		if len(cli) != len(api) || cli[len(cli)-1].Hash != api[len(api)-1].Hash {
			t.Fatalf("CLI pages %d rows, API pages %d", len(cli), len(api))
		}
	})
	t.Run("text and csv", func(t *testing.T) {
		all := parseJSONL(t, runCLI(ctx, env, "", "audit", "--format", "jsonl").stdout)
		text := runCLI(ctx, env, "", "audit")
		if lines := strings.Count(text.stdout, "\n"); lines != len(all) || !strings.Contains(text.stdout, "chain_genesis") {
			t.Fatalf("text: %d lines, want %d:\n%s", lines, len(all), text.stdout)
		}
		recs, err := csv.NewReader(strings.NewReader(runCLI(ctx, env, "", "audit", "--format", "csv").stdout)).ReadAll()
		if err != nil || len(recs) != len(all)+1 || strings.Join(recs[0], ",") != "seq,at,actor,event,request_id,grant_id,detail,hash" {
			t.Fatalf("csv: %d records, %v", len(recs), err)
		}
		if last := recs[len(recs)-1]; last[7] != all[len(all)-1].Hash || last[6] != string(all[len(all)-1].Detail) {
			t.Fatalf("csv last row %v", last)
		}
	})
	t.Run("bad arguments", func(t *testing.T) {
		for _, args := range [][]string{{"--format", "xml"}, {"--since", "yesterday"}, {"--limit", "-1"}, {"extra"},
			{"verify", "--expect", "3:abc"}} {
			res := runCLI(ctx, env, "", append([]string{"audit"}, args...)...)
			if res.code != exitUsage || strings.Count(res.stderr, "\n") != 1 {
				t.Errorf("%v: exit %d %q, want 2 and one line", args, res.code, res.stderr)
			}
		}
	})
}

// TestAuditCLI_Verify: verify passes on the live database, prints the
// last row's hash to keep, passes with it as --expect, and fails (exit 1,
// naming the row) once the sqlite3 tool edits a row.
func TestAuditCLI_Verify(t *testing.T) {
	sqlite3, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Fatal("the sqlite3 tool is needed (apt-get install sqlite3; .ci/run installs it)")
	}
	g := startLive(t, nil)
	liveTraffic(t, g)
	env := auditEnv(t, g)
	ctx := context.Background()
	res := runCLI(ctx, env, "", "audit", "verify")
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	if res.code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "ok: ") || !strings.HasSuffix(lines[0], " rows, chain intact") {
		t.Fatalf("verify: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	kept := strings.TrimPrefix(lines[1], "last row: ")
	if res := runCLI(ctx, env, "", "audit", "verify", "--expect", kept); res.code != 0 {
		t.Fatalf("verify --expect %s: exit %d %s", kept, res.code, res.stdout)
	}
	cmd := exec.Command(sqlite3, "-cmd", ".timeout 10000", g.App.Config.Storage.Path,
		`UPDATE audit SET detail = replace(detail, 'allow_once', 'deny') WHERE seq = (SELECT MIN(seq) FROM audit WHERE event = 'decision')`)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sqlite3: %v %s", err, out)
	}
	res = runCLI(ctx, env, "", "audit", "verify")
	if res.code != exitFail || !strings.Contains(res.stdout, "FAILED: row ") || !strings.Contains(res.stdout, " changed") {
		t.Fatalf("verify after an edit: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}

// followCLI runs `gateway audit --follow` until the test ends.
func followCLI(t *testing.T, env func(string) string, args ...string) *lockedBuffer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &lockedBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"audit", "--follow", "--format", "jsonl"}, args...), strings.NewReader(""), out, out, env)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("audit --follow exited %d: %s", code, out)
			}
		case <-time.After(10 * time.Second):
			t.Error("audit --follow did not stop within 10s of its context")
		}
	})
	return out
}

// waitLine waits until out holds a line containing all of parts.
func waitLine(t *testing.T, out *lockedBuffer, within time.Duration, parts ...string) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		for _, l := range strings.Split(out.String(), "\n") {
			ok := true
			for _, p := range parts {
				ok = ok && strings.Contains(l, p)
			}
			if ok && l != "" {
				return time.Since(start)
			}
		}
		if time.Since(start) > within {
			t.Fatalf("no line with %q within %s:\n%s", parts, within, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAuditCLI_FollowSQLite: --follow prints what was there, then each new
// row as it commits; --limit N with --follow starts with the last N.
func TestAuditCLI_FollowSQLite(t *testing.T) {
	g := startLive(t, nil)
	liveTraffic(t, g)
	env := auditEnv(t, g)
	out := followCLI(t, env, "--event", "decision")
	waitLine(t, out, 5*time.Second, `"event":"decision"`)
	before := strings.Count(out.String(), "\n")
	tail := followCLI(t, env, "--limit", "1")
	waitLine(t, tail, 5*time.Second, `"seq":`)
	r, err := client.New(g.URL, liveAgentToken).Request(context.Background(),
		client.Req{CallID: "follow-1", Capability: "fs:read", Target: "/srv/f.txt"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Admin.Decide(context.Background(), r.ID, client.Deny); err != nil {
		t.Fatal(err)
	}
	waitLine(t, out, 2*time.Second, r.ID, `"decision":"deny"`)
	if n := strings.Count(out.String(), "\n"); n != before+1 {
		t.Fatalf("follow printed %d new lines, want 1:\n%s", n-before, out)
	}
	waitLine(t, tail, 2*time.Second, r.ID, `"decision":"deny"`)
	if n := len(parseJSONL(t, tail.String())); n != 3 { // the last row, then the outcome and decision
		t.Fatalf("--limit 1 --follow printed %d rows, want 3:\n%s", n, tail)
	}
}

// TestAuditCLI_FollowAcrossReplicas: on PostgreSQL, `gateway audit
// --follow` sees a decision made on another replica within a second.
func TestAuditCLI_FollowAcrossReplicas(t *testing.T) {
	dsn := storagetest.FreshSchema(t) // skips, saying why, without a server
	withPG := func(c *config.Config) { c.Storage.Driver, c.Storage.DSN = "postgres", dsn }
	r1 := startLive(t, withPG)
	r2 := startLive(t, withPG)
	cfgPath := filepath.Join(t.TempDir(), "audit.toml")
	if err := os.WriteFile(cfgPath, []byte("[storage]\ndriver = \"postgres\"\ndsn_env = \"AUDIT_DSN\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"HOME": t.TempDir(), "AUDIT_DSN": dsn}
	out := followCLI(t, func(k string) string { return vars[k] }, "--config", cfgPath)
	waitLine(t, out, 10*time.Second, `"event":"chain_genesis"`)
	ctx := context.Background()
	for i := range 5 {
		r, err := client.New(r1.URL, liveAgentToken).Request(ctx,
			client.Req{CallID: fmt.Sprintf("rep-%d", i), Capability: "fs:read", Target: "/srv/rep.txt"}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r2.Admin.Decide(ctx, r.ID, client.AllowOnce); err != nil {
			t.Fatal(err)
		}
		took := waitLine(t, out, time.Second, r.ID, `"event":"decision"`)
		t.Logf("decision %d on replica 2 seen by --follow after %s", i, took.Round(time.Millisecond))
	}
	res := runCLI(ctx, func(k string) string { return vars[k] }, "", "audit", "verify", "--config", cfgPath)
	if res.code != 0 || !strings.Contains(res.stdout, "chain intact") {
		t.Fatalf("verify: %d %s %s", res.code, res.stdout, res.stderr)
	}
}

// TestAuditLine_Zone: the text format is for people, so its times are in
// server.timezone with the abbreviation (jsonl and csv stay UTC).
func TestAuditLine_Zone(t *testing.T) {
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	r := storage.AuditEvent{Seq: 7, At: time.Date(2026, 11, 23, 19, 0, 0, 0, time.UTC), Event: "decision", Actor: "web:owner"}
	if got := auditLine(r, tokyo); !strings.Contains(got, "2026-11-24 04:00:00 JST  decision") {
		t.Errorf("got %q", got)
	}
}

// The text format is for people: a target or a name with hidden
// characters shows them as ⟦U+…⟧, like the cards (jsonl and csv stay
// exact, for the chain).
func TestAuditLine_HiddenCharactersVisible(t *testing.T) {
	r := storage.AuditEvent{Seq: 7, At: time.Date(2026, 11, 23, 19, 0, 0, 0, time.UTC), Event: "rule_added",
		Actor: "telegram:Rob\u202eerto (42)", Detail: map[string]any{"target": "/srv/a\u202eb/**", "rule_id": "api:1",
			"list": []any{"x\u200by"}}}
	got := auditLine(r, time.UTC)
	if strings.ContainsAny(got, "\u202e\u200b") {
		t.Fatalf("auditLine shows hidden characters raw: %q", got)
	}
	for _, want := range []string{"telegram:Rob⟦U+202E⟧erto (42)", "target=/srv/a⟦U+202E⟧b/**", `x⟦U+200B⟧y`} {
		if !strings.Contains(got, want) {
			t.Errorf("auditLine %q lacks %q", got, want)
		}
	}
}
