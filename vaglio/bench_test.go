package vaglio

import (
	"context"
	"testing"
)

// BenchmarkCheck is the guard and the rule judge on a request the shape
// of the policy benchmark's (a file read with a path in its args), with
// the gateway's own files to guard: what vaglio adds to a decision.
func BenchmarkCheck(b *testing.B) { benchCheck(b, "") }

// BenchmarkCheck_Log is BenchmarkCheck with the decision log on, as the
// gateway's default configuration has it (vaglio.log_dir).
func BenchmarkCheck_Log(b *testing.B) { benchCheck(b, b.TempDir()) }

func benchCheck(b *testing.B, logDir string) {
	v := New(Options{Home: "/home/r", Threshold: DefaultThreshold, LogDir: logDir, Own: Own{Paths: []string{
		"/home/r/.local/state/metnos-gateway/gateway.db", "/home/r/.config/metnos-gateway/config.toml"}}})
	b.Cleanup(func() { v.Close() })
	ctx := context.Background()
	for _, r := range []Request{
		{Agent: "metnos", Capability: "fs:read", Target: "/home/r/docs/d7/file119.txt", Intent: "read the invoices for the monthly report",
			Executor: "read_file", Args: map[string]any{"path": "/home/r/docs/d7/file119.txt", "encoding": "utf-8"}},
		{Agent: "metnos", Capability: "code:exec", Target: "git status --short", Intent: "see what changed",
			Executor: "shell_exec", Args: map[string]any{"command": []any{"git", "status", "--short"}, "cwd": "/home/r/proj"}},
	} {
		b.Run(r.Capability, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if v.MustAsk(r); !v.Check(ctx, r).Approved {
					b.Fatal("refused")
				}
			}
		})
	}
}
