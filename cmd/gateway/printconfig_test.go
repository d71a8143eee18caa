package main

import (
	"context"
	"strings"
	"testing"

	"github.com/metnos/gateway/hooks"
)

// TestHookPrintConfig_InDocs: every adapter has settings to print, and
// docs/agents.md shows exactly what `gateway hook NAME --print-config`
// prints (for HOME=/home/you), so the page cannot drift from the command.
func TestHookPrintConfig_InDocs(t *testing.T) {
	doc := readRepoFile(t, "docs/agents.md")
	getenv := func(k string) string { return map[string]string{"HOME": "/home/you"}[k] }
	for _, ad := range hooks.Adapters() {
		r := runCLI(context.Background(), getenv, "", "hook", ad.Name, "--print-config")
		if r.code != 0 || r.stdout == "" || !strings.Contains(r.stderr, "merge this into ~/") {
			t.Errorf("gateway hook %s --print-config: exit %d\n%s\n%s", ad.Name, r.code, r.stdout, r.stderr)
			continue
		}
		if !strings.Contains(doc, "\n"+r.stdout+"```\n") {
			t.Errorf("docs/agents.md does not show what gateway hook %s --print-config prints:\n%s", ad.Name, r.stdout)
		}
	}
}
