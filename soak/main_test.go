//go:build soak

package soak

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// gatewayBin is the gateway binary the child-process scenarios run, built
// once by TestMain without the race detector, so its RSS is what a user's
// would be.
var gatewayBin string

// report collects the figures every scenario prints at the end.
var report = &summary{start: time.Now()}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gateway-soak-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	gatewayBin = filepath.Join(dir, "gateway")
	goCmd := "go"
	if p := os.Getenv("GO"); p != "" {
		goCmd = p
	}
	build := exec.Command(goCmd, "build", "-trimpath", "-o", gatewayBin, "github.com/metnos/gateway/cmd/gateway")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "soak: build the gateway: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	var b strings.Builder
	report.print(&b)
	fmt.Print(b.String())
	if p := os.Getenv("SOAK_REPORT"); p != "" {
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "soak: write report:", err)
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// envInt and envDuration read the knobs that shrink or grow the run.
func envInt(name string, def int) int {
	if v := os.Getenv(name); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return n
		}
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v := os.Getenv(name); v != "" {
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			return d
		}
	}
	return def
}

// summary is the table printed at the end of the run.
type summary struct {
	mu    sync.Mutex
	start time.Time
	rows  [][3]string // scenario, figure, value
	fails []string
}

func (s *summary) add(scenario, figure, format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows = append(s.rows, [3]string{scenario, figure, fmt.Sprintf(format, args...)})
}

func (s *summary) fail(scenario, format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fails = append(s.fails, scenario+": "+fmt.Sprintf(format, args...))
}

func (s *summary) print(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	host, _ := os.Hostname()
	fmt.Fprintf(w, "\n==================== SOAK SUMMARY ====================\n")
	fmt.Fprintf(w, "make soak: %s, %s/%s, %d CPUs, host %s, %s, total %s; load average at the end %s\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), host, s.start.UTC().Format("2006-01-02 15:04 MST"),
		time.Since(s.start).Round(time.Second), loadAvg())
	fmt.Fprintf(w, "(the gateway shares the machine with the load generator, the fakes and the scripted person)\n\n")
	fmt.Fprintln(w, "| scenario | figure | value |")
	fmt.Fprintln(w, "|---|---|---|")
	last := ""
	for _, r := range s.rows {
		sc := r[0]
		if sc == last {
			sc = ""
		}
		last = r[0]
		fmt.Fprintf(w, "| %s | %s | %s |\n", sc, r[1], r[2])
	}
	if len(s.fails) == 0 {
		fmt.Fprintln(w, "\nAll checks passed.")
	} else {
		fmt.Fprintf(w, "\n%d CHECKS FAILED:\n", len(s.fails))
		for _, f := range s.fails {
			fmt.Fprintln(w, "  -", f)
		}
	}
	fmt.Fprintln(w, "======================================================")
}

// durations summarises latencies.
type durations []time.Duration

func (d durations) pct(p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(float64(len(s)-1)*p + 0.5)
	return s[i]
}

func (d durations) String() string {
	if len(d) == 0 {
		return "n/a"
	}
	return fmt.Sprintf("p50 %s · p90 %s · p99 %s · max %s (n=%d)", ms(d.pct(0.5)), ms(d.pct(0.9)), ms(d.pct(0.99)),
		ms(d.pct(1)), len(d))
}

func ms(d time.Duration) string {
	switch {
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// loadAvg is the host's 1, 5 and 15 minute load averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "n/a"
	}
	return strings.Join(f[:3], " / ")
}

// failf fails the test and records the failure for the summary.
func failf(t *testing.T, scenario, format string, args ...any) {
	t.Helper()
	report.fail(scenario, format, args...)
	t.Errorf(format, args...)
}
