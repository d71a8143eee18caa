package main

// Completeness checks of the docs test (docs_test.go): the references that
// list what the product has (the command line, the Go client's methods,
// the ways an agent connects) name all of it. Each returns one problem a
// line, so TestDocsCompleteCatchPlanted can run it on a planted omission.

import (
	"bytes"
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// usageCommands reads "gateway WORD [SUB|SUB…]" lines (the usage of
// `gateway --help`) into the commands they name: "hook codex", "policy
// check", "login".
func usageCommands(text string) map[string]bool {
	out := map[string]bool{}
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(strings.ReplaceAll(strings.TrimSpace(l), " | ", "|"))
		if len(f) < 2 || f[0] != "gateway" {
			continue
		}
		cmd := f[1]
		if len(f) < 3 || strings.HasPrefix(f[2], "-") || strings.HasPrefix(f[2], "[") || strings.HasPrefix(f[2], "(") ||
			strings.ToUpper(f[2]) == f[2] {
			out[cmd] = true
			continue
		}
		for _, sub := range strings.Split(f[2], "|") {
			out[cmd+" "+sub] = true
		}
	}
	return out
}

// mentionedCommands is what a reference page's "gateway …" lines cover:
// each command alone, and with every word after it as a subcommand (a
// description may follow; an extra entry only widens what is found).
func mentionedCommands(text string) map[string]bool {
	out := map[string]bool{}
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(strings.ReplaceAll(strings.TrimSpace(l), " | ", "|"))
		if len(f) < 2 || f[0] != "gateway" {
			continue
		}
		out[f[1]] = true
		if len(f) > 2 {
			for _, sub := range strings.Split(f[2], "|") {
				out[f[1]+" "+sub] = true
			}
		}
	}
	return out
}

// checkCLIReference: every command `gateway --help` lists is in
// docs/cli.md's reference.
func checkCLIReference(help, cliMD string) []string {
	doc := mentionedCommands(cliMD)
	var problems []string
	for c := range usageCommands(help) {
		if !doc[c] {
			problems = append(problems, "docs/cli.md: `gateway "+c+"` is in `gateway --help` but not in the reference")
		}
	}
	sort.Strings(problems)
	return problems
}

var clientRowRE = regexp.MustCompile("(?m)^\\| `([A-Z][A-Za-z]*)\\(")

// checkClientTable: the Go client table of docs/agents.md names every
// exported method of client.Client.
func checkClientTable(methods []string, agentsMD string) []string {
	_, after, _ := strings.Cut(agentsMD, "## The Go client")
	after, _, _ = strings.Cut(after, "\n## ")
	listed := map[string]bool{}
	for _, m := range clientRowRE.FindAllStringSubmatch(after, -1) {
		listed[m[1]] = true
	}
	var problems []string
	for _, m := range methods {
		if !listed[m] {
			problems = append(problems, "docs/agents.md: the Go client table has no row for Client."+m)
		}
	}
	return problems
}

// clientMethods lists the exported methods of *client.Client.
func clientMethods(dir string) ([]string, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var out []string
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || !fd.Name.IsExported() || len(fd.Recv.List) != 1 {
				continue
			}
			if st, ok := fd.Recv.List[0].Type.(*ast.StarExpr); ok {
				if id, ok := st.X.(*ast.Ident); ok && id.Name == "Client" {
					out = append(out, fd.Name.Name)
				}
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// checkWaysIn: the table of ways in at the top of docs/agents.md names
// every hook `gateway --help` lists.
func checkWaysIn(help, agentsMD string) []string {
	table, _, _ := strings.Cut(agentsMD, "\n## ")
	var problems []string
	for c := range usageCommands(help) {
		if name, ok := strings.CutPrefix(c, "hook "); ok && !strings.Contains(table, "`gateway hook "+name) {
			problems = append(problems, "docs/agents.md: the table of ways in has no row for `gateway hook "+name+"`")
		}
	}
	sort.Strings(problems)
	return problems
}

// gatewayHelp is what `gateway --help` prints.
func gatewayHelp(t *testing.T) string {
	t.Helper()
	var out, errb bytes.Buffer
	run(context.Background(), []string{"--help"}, strings.NewReader(""), &out, &errb, func(string) string { return "" })
	return out.String() + errb.String()
}

// TestDocsComplete: the command line reference, the Go client table and
// the table of ways in list everything the product has.
func TestDocsComplete(t *testing.T) {
	help := gatewayHelp(t)
	if len(usageCommands(help)) < 10 {
		t.Fatalf("gateway --help lists too few commands to check against:\n%s", help)
	}
	agents := readRepoFile(t, "docs/agents.md")
	methods, err := clientMethods(filepath.Join(repoRoot, "client"))
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	problems = append(problems, checkCLIReference(help, readRepoFile(t, "docs/cli.md"))...)
	problems = append(problems, checkClientTable(methods, agents)...)
	problems = append(problems, checkWaysIn(help, agents)...)
	for _, p := range problems {
		t.Error(p)
	}
}

// TestDocsCompleteCatchPlanted: each check fails on a page with one
// omission, and passes it whole.
func TestDocsCompleteCatchPlanted(t *testing.T) {
	help := "Usage:\n  gateway login [--user NAME]\n  gateway hook claude-code|codex [--wait 9m]\n  gateway policy registry|table\n"
	cli := "```\ngateway login [--user NAME]   a link\ngateway hook claude-code [--wait 9m]\ngateway hook codex [--no-ask]\ngateway policy registry | table\n```\n"
	if p := checkCLIReference(help, cli); len(p) != 0 {
		t.Errorf("a whole reference: %q", p)
	}
	if p := checkCLIReference(help, strings.Replace(cli, "gateway login [--user NAME]   a link\n", "", 1)); len(p) != 1 {
		t.Errorf("a reference without login: %q, want one problem", p)
	}
	agents := "| a | the [hook](#x): `gateway hook claude-code` |\n| b | `gateway hook codex` |\n\n## The Go client\n\n| `Check(ctx, req)` | x |\n| `Get(ctx, id, wait)` | y |\n\n## Examples\n"
	if p := checkClientTable([]string{"Check", "Get"}, agents); len(p) != 0 {
		t.Errorf("a whole client table: %q", p)
	}
	if p := checkClientTable([]string{"Check", "Get", "Simulate"}, agents); len(p) != 1 {
		t.Errorf("a client table without Simulate: %q, want one problem", p)
	}
	if p := checkWaysIn(help, agents); len(p) != 0 {
		t.Errorf("a whole table of ways in: %q", p)
	}
	if p := checkWaysIn(help, strings.Replace(agents, "| b | `gateway hook codex` |\n", "", 1)); len(p) != 1 {
		t.Errorf("a table of ways in without codex: %q, want one problem", p)
	}
}
