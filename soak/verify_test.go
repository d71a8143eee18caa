//go:build soak

package soak

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// dbRequest is a request row with its audit counts.
type dbRequest struct {
	ID, CallID, Agent, Status, Decision, DecidedBy, ExpiresAt string
	Outcomes, Finishes                                        int
}

// auditCheck is what checkAudit found.
type auditCheck struct {
	Requests   map[string]dbRequest // by id
	ByCall     map[string]string    // agent + "/" + call_id → id
	Rows       int                  // audit rows
	MaxID      int64
	Gaps       int64 // audit ids missing from 1..max
	Problems   []string
	ByStatus   map[string]int
	Orphans    int // audit rows naming a request that does not exist
	Decisions  int // decision rows
	Expiries   int
	Cancels    int
	GrantsMade int
}

// openRO opens the gateway's SQLite file for reading, beside a running
// gateway (WAL lets readers in another process see every commit).
func openRO(path string) (*sql.DB, error) {
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?mode=ro&_pragma=busy_timeout(10000)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// checkAudit reads every request and the audit trail, and checks the
// invariants of SPEC §5: one outcome row per request; one decision,
// expired or cancelled row per request a person, the clock or the agent
// finished, none for requests policy decided on arrival or still pending;
// and audit ids 1..max with no gap (SQLite's AUTOINCREMENT counter rolls
// back with its transaction, so even a killed writer leaves none).
func checkAudit(ctx context.Context, path string) (auditCheck, error) {
	db, opts, err := openAuditDB(path)
	if err != nil {
		return auditCheck{}, err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, opts) // one snapshot for every query
	if err != nil {
		return auditCheck{}, err
	}
	defer tx.Rollback()
	ac := auditCheck{Requests: map[string]dbRequest{}, ByCall: map[string]string{}, ByStatus: map[string]int{}}
	rows, err := tx.QueryContext(ctx, `SELECT r.id, r.call_id, r.agent, r.status, COALESCE(r.decision, ''), r.decided_by,
		r.expires_at,
		(SELECT COUNT(*) FROM audit a WHERE a.request_id = r.id AND a.event = 'outcome'),
		(SELECT COUNT(*) FROM audit a WHERE a.request_id = r.id AND a.event IN ('decision', 'expired', 'cancelled'))
		FROM requests r`)
	if err != nil {
		return ac, err
	}
	for rows.Next() {
		var r dbRequest
		if err := rows.Scan(&r.ID, &r.CallID, &r.Agent, &r.Status, &r.Decision, &r.DecidedBy, &r.ExpiresAt,
			&r.Outcomes, &r.Finishes); err != nil {
			rows.Close()
			return ac, err
		}
		ac.Requests[r.ID] = r
		ac.ByCall[r.Agent+"/"+r.CallID] = r.ID
		ac.ByStatus[r.Status]++
		want := 1
		if r.Status == "pending" || r.DecidedBy == "policy" {
			want = 0
		}
		if r.Outcomes != 1 {
			ac.Problems = append(ac.Problems, fmt.Sprintf("request %s has %d outcome rows", r.ID, r.Outcomes))
		}
		if r.Finishes != want {
			ac.Problems = append(ac.Problems, fmt.Sprintf("request %s (%s by %q) has %d decision/expired/cancelled rows, want %d",
				r.ID, r.Status, r.DecidedBy, r.Finishes, want))
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return ac, err
	}
	var maxID sql.NullInt64
	if err := tx.QueryRowContext(ctx, auditGapQuery()).Scan(&ac.Rows, &maxID); err != nil {
		return ac, err
	}
	ac.MaxID = maxID.Int64
	ac.Gaps = ac.MaxID - int64(ac.Rows)
	if ac.Gaps != 0 {
		ac.Problems = append(ac.Problems, fmt.Sprintf("audit ids: %d rows up to id %d: %d missing", ac.Rows, ac.MaxID, ac.Gaps))
	}
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM audit a WHERE a.request_id IS NOT NULL
		AND NOT EXISTS (SELECT 1 FROM requests r WHERE r.id = a.request_id)`).Scan(&ac.Orphans); err != nil {
		return ac, err
	}
	if ac.Orphans != 0 {
		ac.Problems = append(ac.Problems, fmt.Sprintf("%d audit rows name a request that does not exist", ac.Orphans))
	}
	var dupes int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT request_id FROM audit
		WHERE event IN ('outcome', 'decision', 'expired', 'cancelled') AND request_id IS NOT NULL
		GROUP BY request_id, event HAVING COUNT(*) > 1) AS d`).Scan(&dupes); err != nil {
		return ac, err
	}
	if dupes != 0 {
		ac.Problems = append(ac.Problems, fmt.Sprintf("%d (request, event) pairs audited twice", dupes))
	}
	err = tx.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM audit WHERE event = 'decision'),
		(SELECT COUNT(*) FROM audit WHERE event = 'expired'),
		(SELECT COUNT(*) FROM audit WHERE event = 'cancelled'),
		(SELECT COUNT(*) FROM audit WHERE event = 'grant_written')`).Scan(&ac.Decisions, &ac.Expiries, &ac.Cancels, &ac.GrantsMade)
	return ac, err
}

// leak is one secret found where it must not be.
type leak struct {
	File, Needle, Context string
}

// grepSecrets looks for every needle in the files and in every file under
// the directories (the gateway's log, the vaglio JSONL, the database).
// It returns the leaks, and how many bytes and lines it read.
func grepSecrets(t *testing.T, needles []string, paths ...string) (leaks []leak, size int64, lines int) {
	t.Helper()
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			continue
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		_ = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, path)
			}
			return nil
		})
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Errorf("read %s: %v", f, err)
			continue
		}
		size += int64(len(b))
		lines += bytes.Count(b, []byte("\n"))
		for _, n := range needles {
			if i := bytes.Index(b, []byte(n)); i >= 0 {
				lo, hi := max(0, i-80), min(len(b), i+len(n)+80)
				leaks = append(leaks, leak{File: f, Needle: n, Context: strings.ToValidUTF8(string(b[lo:hi]), "?")})
			}
		}
	}
	return leaks, size, lines
}

// checkNoSecrets greps the run's files and fails the test on a leak.
func checkNoSecrets(t *testing.T, scenario string, s secrets, logs []string, others ...string) {
	t.Helper()
	leaks, size, lines := grepSecrets(t, s.needles(), append(append([]string(nil), logs...), others...)...)
	logSize, logLines := int64(0), 0
	for _, l := range logs {
		if b, err := os.ReadFile(l); err == nil {
			logSize += int64(len(b))
			logLines += bytes.Count(b, []byte("\n"))
		}
	}
	report.add(scenario, "secrets in logs, vaglio JSONL and DB", "%d found (grepped %d files' %.1f MiB, %d log lines)",
		len(leaks), countFiles(append(append([]string(nil), logs...), others...)), float64(size)/(1<<20), logLines)
	if logLines == 0 {
		failf(t, scenario, "the gateway logged nothing: the grep proved nothing")
	}
	for _, l := range leaks {
		failf(t, scenario, "secret %q found in %s: …%s…", l.Needle, l.File, l.Context)
	}
	_ = lines
}

func countFiles(paths []string) int {
	n := 0
	for _, p := range paths {
		_ = filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				n++
			}
			return nil
		})
	}
	return n
}
