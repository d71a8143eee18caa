package main

// The checks of the docs test (docs_test.go). Each returns the problems it
// found, one line each naming the file and line, so the test can also run
// it on a planted error and see it fail.

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// fragmentBase is the minimal config a toml block marked
// "<!-- docs-test: fragment -->" is merged into before it is checked: the
// messengers and an agent that fragments name without configuring.
const fragmentBase = `
[telegram]
token_env = "DOCS_TELEGRAM_BOT_TOKEN"
chat_id = 1
approvers = [1]

[slack]
bot_token_env = "DOCS_SLACK_BOT_TOKEN"
signing_secret_env = "DOCS_SLACK_SIGNING_SECRET"
channel_id = "C0DOCS"
approvers = ["U0DOCS"]

[[agents]]
id = "docs-agent"
token_env = "DOCS_AGENT_TOKEN"
`

var envNameRE = regexp.MustCompile(`"([A-Z][A-Z0-9_]*)"`)

// checkTOML runs `gateway config check` on every toml block: whole, or
// merged into fragmentBase when marked a fragment. A block that is not the
// gateway's config (Codex's config.toml) is marked "skip" with the reason.
// Every variable a block names gets a value, so that secrets taken from
// the environment are there.
func checkTOML(files []docFile, dir string) []string {
	var problems []string
	for _, f := range files {
		blocks, _ := parse(f)
		for _, b := range blocks {
			if b.lang != "toml" || strings.HasPrefix(b.marker, "skip") {
				continue
			}
			where := fmt.Sprintf("%s:%d", b.file, b.line)
			text := b.text
			if b.marker == "fragment" {
				merged, err := mergeTOML(fragmentBase, text)
				if err != nil {
					problems = append(problems, where+": toml fragment: "+err.Error())
					continue
				}
				text = merged
			} else if b.marker != "" {
				problems = append(problems, where+": unknown docs-test marker "+strconv.Quote(b.marker)+" (fragment or skip …)")
				continue
			}
			vars := map[string]string{"HOME": dir, "XDG_STATE_HOME": dir + "/state", "XDG_DATA_HOME": dir + "/data"}
			for _, m := range envNameRE.FindAllStringSubmatch(text, -1) {
				vars[m[1]] = "docs-test-value-" + strings.ToLower(m[1])
			}
			path := filepath.Join(dir, "docs-block.toml")
			if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
				return append(problems, err.Error())
			}
			var out, errb bytes.Buffer
			code := run(context.Background(), []string{"config", "check", "--config", path}, strings.NewReader(""), &out, &errb,
				func(k string) string { return vars[k] })
			if code != 0 {
				problems = append(problems, fmt.Sprintf("%s: gateway config check fails on this block: %s", where, strings.TrimSpace(errb.String())))
			}
		}
	}
	return problems
}

// mergeTOML lays frag over base: tables merge key by key, arrays of tables
// are appended, any other value of frag replaces base's.
func mergeTOML(base, frag string) (string, error) {
	var b, f map[string]any
	if _, err := toml.Decode(base, &b); err != nil {
		return "", err
	}
	if _, err := toml.Decode(frag, &f); err != nil {
		return "", err
	}
	mergeMaps(b, f)
	var out bytes.Buffer
	if err := toml.NewEncoder(&out).Encode(b); err != nil {
		return "", err
	}
	return out.String(), nil
}

func mergeMaps(dst, src map[string]any) {
	for k, v := range src {
		switch sv := v.(type) {
		case map[string]any:
			if dv, ok := dst[k].(map[string]any); ok {
				mergeMaps(dv, sv)
				continue
			}
		case []map[string]any:
			if dv, ok := dst[k].([]map[string]any); ok {
				dst[k] = append(dv, sv...)
				continue
			}
		}
		dst[k] = v
	}
}

// checkCommands runs every gateway command line the docs show with --help
// appended (twice): the command and its subcommands exist and every flag given
// parses (exit 0). Each flag used must also be in `gateway --help`.
func checkCommands(files []docFile) []string {
	var problems []string
	for _, c := range commandLines(files) {
		var out, errb bytes.Buffer
		// --help twice: a flag shown without its value ("`gateway ask
		// --session`") takes the first as its value. It goes before a
		// "--": the words after it are another program's (`gateway
		// mcp-proxy --name fs -- CMD ARGS…`).
		own, other := c.args, []string(nil)
		if i := slices.Index(c.args, "--"); i >= 0 {
			own, other = c.args[:i], c.args[i:]
		}
		args := append(append(append([]string{}, own...), "--help", "--help"), other...)
		code := run(context.Background(), args, strings.NewReader(""), &out, &errb,
			func(string) string { return "" })
		if code != 0 {
			problems = append(problems, fmt.Sprintf("%s: `%s` does not parse: %s", c.where, c.raw, strings.TrimSpace(errb.String())))
			continue
		}
		for _, a := range own {
			name, _, _ := strings.Cut(a, "=")
			if strings.HasPrefix(name, "--") && name != "--help" && !regexp.MustCompile(`(^|[\s\[|])`+regexp.QuoteMeta(name)+`\b`).MatchString(usage) {
				problems = append(problems, fmt.Sprintf("%s: `%s`: gateway --help does not list %s", c.where, c.raw, name))
			}
		}
	}
	return problems
}

var makeRE = regexp.MustCompile(`(?:^|[\s(` + "`" + `])make ([a-z][a-z0-9_-]*)`)

// checkMakeTargets: every `make X` the docs name (in code) is a target.
func checkMakeTargets(files []docFile, makefile string) []string {
	targets := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-z][a-zA-Z0-9_-]*):`).FindAllStringSubmatch(makefile, -1) {
		targets[m[1]] = true
	}
	var problems []string
	for _, f := range files {
		blocks, paras := parse(f)
		var code []struct {
			where, text string
		}
		for _, b := range blocks {
			if shellLangs[b.lang] {
				code = append(code, struct{ where, text string }{fmt.Sprintf("%s:%d", b.file, b.line), b.text})
			}
		}
		for _, p := range paras {
			for _, s := range spans(p.text) {
				code = append(code, struct{ where, text string }{fmt.Sprintf("%s:%d", p.file, p.line), s.code})
			}
		}
		for _, c := range code {
			for _, m := range makeRE.FindAllStringSubmatch(c.text, -1) {
				if !targets[m[1]] {
					problems = append(problems, fmt.Sprintf("%s: `make %s`: the Makefile has no target %s", c.where, m[1], m[1]))
				}
			}
		}
	}
	return problems
}

var (
	methodPathRE = regexp.MustCompile(`^(GET|POST|PUT|PATCH|DELETE|HEAD)\s+(/\S*)$`)
	methodRE     = regexp.MustCompile(`^(GET|POST|PUT|PATCH|DELETE|HEAD)$`)
	curlURLRE    = regexp.MustCompile(`(?:\$GATEWAY_URL|\$\{GATEWAY_URL\}|https?://(?:127\.0\.0\.1|localhost)(?::\d+)?)(/[^\s"'?]*)`)
	curlMethodRE = regexp.MustCompile(`(?:-X|--request)\s+([A-Z]+)`)
	familyRE     = regexp.MustCompile(`/[A-Z][A-Z0-9_]*(/|$)`)
)

// checkRoutes: every HTTP method and path the docs show is a route of the
// server. A path is shown in a code span ("GET /v1/grants[?all=true]", or
// after one with only a comma between: "`GET /healthz`, `/readyz`"; a
// method alone before it shares the path: "`GET`, `POST /v1/policy/rules`")
// or in a curl command line (POST with -d, else GET, or -X).
func checkRoutes(files []docFile, route func(method, path string) string) []string {
	var problems []string
	check := func(where, method, path string) {
		path = concretePath(path)
		if familyRE.MatchString(path) {
			return // "POST /v1/hooks/NAME" names a family of routes, not one
		}
		if route(method, path) == "" {
			problems = append(problems, fmt.Sprintf("%s: %s %s is not a route of the server", where, method, path))
		}
	}
	for _, f := range files {
		blocks, paras := parse(f)
		for _, p := range paras {
			where := fmt.Sprintf("%s:%d", p.file, p.line)
			var pending, last []string
			for _, s := range spans(p.text) {
				gap := strings.TrimSpace(s.gap)
				joined := gap == "," || gap == ", and" || gap == "and" || gap == ";"
				if !joined {
					pending, last = nil, nil
				}
				switch {
				case methodRE.MatchString(s.code):
					pending = append(pending, s.code)
				case methodPathRE.MatchString(s.code):
					m := methodPathRE.FindStringSubmatch(s.code)
					last = append(pending, m[1])
					for _, meth := range last {
						check(where, meth, m[2])
					}
					pending = nil
				case strings.HasPrefix(s.code, "/") && last != nil && !strings.ContainsAny(s.code, " "):
					for _, meth := range last {
						check(where, meth, s.code)
					}
				default:
					pending, last = nil, nil
				}
			}
		}
		for _, b := range blocks {
			if !shellLangs[b.lang] {
				continue
			}
			text := strings.ReplaceAll(b.text, "\\\n", " ")
			for i, l := range strings.Split(text, "\n") {
				if !strings.Contains(l, "curl ") {
					continue
				}
				for _, m := range curlURLRE.FindAllStringSubmatch(l, -1) {
					method := "GET"
					if strings.Contains(l, " -d ") || strings.Contains(l, " --data") {
						method = "POST"
					}
					if mm := curlMethodRE.FindStringSubmatch(l); mm != nil {
						method = mm[1]
					}
					check(fmt.Sprintf("%s:%d", b.file, b.line+1+i), method, m[1])
				}
			}
		}
	}
	return problems
}

// concretePath drops a "[?wait=30s]" or "?all=true" and fills {id}.
func concretePath(p string) string {
	if i := strings.IndexAny(p, "[?"); i >= 0 {
		p = p[:i]
	}
	p = regexp.MustCompile(`\{[^}]*\}|…`).ReplaceAllString(p, "x1")
	return p
}

// errorCodes is what the code can answer in an error's "code": the codes
// written literally, and "invalid_<field>" for any field name the code
// knows (a string it holds, or a JSON field of a body it reads).
type errorCodes struct {
	literal map[string]bool
	fields  map[string]bool
}

func (c errorCodes) has(code string) bool {
	if c.literal[code] {
		return true
	}
	f, ok := strings.CutPrefix(code, "invalid_")
	return ok && c.literal["invalid_"] && c.fields[f]
}

// foreignCodes are other systems' error codes the docs quote (Slack's Web
// API answers), not the gateway's.
var foreignCodes = map[string]bool{"invalid_auth": true, "token_revoked": true, "not_in_channel": true, "channel_not_found": true}

// sourceErrorCodes reads the Go source: the code argument of every
// writeError and requestConflict call ("invalid_"+x counts as "invalid_"),
// and every string literal and JSON tag name as a possible field.
func sourceErrorCodes(root string) (errorCodes, error) {
	c := errorCodes{literal: map[string]bool{}, fields: map[string]bool{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				name := ""
				switch fn := n.Fun.(type) {
				case *ast.Ident:
					name = fn.Name
				case *ast.SelectorExpr:
					name = fn.Sel.Name
				}
				arg := map[string]int{"writeError": 2, "requestConflict": 0}
				if i, ok := arg[name]; ok && i < len(n.Args) {
					e := n.Args[i]
					if be, ok := e.(*ast.BinaryExpr); ok {
						e = be.X // "invalid_" + field
					}
					if s, ok := stringLit(e); ok {
						c.literal[s] = true
					}
				}
			case *ast.BasicLit:
				if s, ok := stringLit(n); ok {
					c.fields[s] = true
				}
			case *ast.Field:
				if n.Tag != nil {
					if tag, ok := stringLit(n.Tag); ok {
						if m := regexp.MustCompile(`json:"([^",]+)`).FindStringSubmatch(tag); m != nil {
							c.fields[m[1]] = true
						}
					}
				}
			}
			return true
		})
		return nil
	})
	return c, err
}

func stringLit(e ast.Expr) (string, bool) {
	bl, ok := e.(*ast.BasicLit)
	if !ok || bl.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(bl.Value)
	return s, err == nil
}

var (
	codeJSONRE   = regexp.MustCompile(`"code"\s*:\s*"([a-z_]+)"`)
	statusCodeRE = regexp.MustCompile("\\b[45][0-9][0-9]\\)?\\s+`([a-z]+(?:_[a-z]+)+)`")
	codeListRE   = regexp.MustCompile("\\(\\s*(`[a-z_]+`(?:,\\s*`[a-z_]+`)*)(?:,\\s*…)?\\s*\\)")
	snakeSpanRE  = regexp.MustCompile("`([a-z_]+)`")
)

// checkErrorCodes: every error code the docs name is one the code can
// answer. A code is named as `"code":"x"`, as a status and a code
// ("409 `rule_from_config`"), as any `invalid_…`, or in a list in
// parentheses with one of those or a known code in it.
func checkErrorCodes(files []docFile, known errorCodes) []string {
	var problems []string
	for _, f := range files {
		blocks, paras := parse(f)
		named := map[string]string{} // code → where
		add := func(code, where string) {
			if _, ok := named[code]; !ok {
				named[code] = where
			}
		}
		for _, b := range blocks {
			for _, m := range codeJSONRE.FindAllStringSubmatch(b.text, -1) {
				add(m[1], fmt.Sprintf("%s:%d", b.file, b.line))
			}
		}
		for _, p := range paras {
			where := fmt.Sprintf("%s:%d", p.file, p.line)
			isCode := func(s string) bool { return strings.HasPrefix(s, "invalid_") && len(s) > len("invalid_") }
			for _, m := range codeJSONRE.FindAllStringSubmatch(p.text, -1) {
				add(m[1], where)
			}
			for _, m := range statusCodeRE.FindAllStringSubmatch(p.text, -1) {
				add(m[1], where)
			}
			for _, s := range spans(p.text) {
				if isCode(s.code) {
					add(s.code, where)
				}
			}
			for _, m := range codeListRE.FindAllStringSubmatch(p.text, -1) {
				var members []string
				listed := false
				for _, mm := range snakeSpanRE.FindAllStringSubmatch(m[1], -1) {
					members = append(members, mm[1])
					_, isNamed := named[mm[1]]
					listed = listed || isCode(mm[1]) || isNamed || known.literal[mm[1]] && strings.Contains(mm[1], "_")
				}
				if listed {
					for _, c := range members {
						add(c, where)
					}
				}
			}
		}
		var codes []string
		for c := range named {
			codes = append(codes, c)
		}
		sort.Strings(codes)
		for _, c := range codes {
			if !known.has(c) && !foreignCodes[c] {
				problems = append(problems, fmt.Sprintf("%s: error code %s is not one the gateway answers", named[c], c))
			}
		}
	}
	return problems
}

// fuzzTarget is a Fuzz function and its package ("./policy").
type fuzzTarget struct{ pkg, name string }

var fuzzFuncRE = regexp.MustCompile(`(?m)^func (Fuzz[A-Za-z0-9_]*)\(\w+ \*testing\.F\)`)

// treeFuzzTargets finds every Fuzz function in the tree's test files.
func treeFuzzTargets(root string) ([]fuzzTarget, error) {
	var out []fuzzTarget
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		for _, m := range fuzzFuncRE.FindAllStringSubmatch(string(b), -1) {
			out = append(out, fuzzTarget{"./" + filepath.ToSlash(rel), m[1]})
		}
		return nil
	})
	return out, err
}

var makeFuzzRE = regexp.MustCompile(`(\./[A-Za-z0-9_/.-]+):(Fuzz[A-Za-z0-9_]*)`)

// checkFuzz: every Fuzz target of the tree is in the Makefile's
// FUZZ_TARGETS (with its package) and in docs/fuzzing.md, and every
// target listed there exists.
func checkFuzz(tree []fuzzTarget, makefile, fuzzingMD string) []string {
	var problems []string
	listed := map[fuzzTarget]bool{}
	if i := strings.Index(makefile, "FUZZ_TARGETS"); i >= 0 {
		section := makefile[i:]
		if j := strings.Index(section, "\n\n"); j >= 0 {
			section = section[:j]
		}
		for _, m := range makeFuzzRE.FindAllStringSubmatch(section, -1) {
			listed[fuzzTarget{m[1], m[2]}] = true
		}
	}
	inTree := map[fuzzTarget]bool{}
	for _, t := range tree {
		inTree[t] = true
		if !listed[t] {
			problems = append(problems, fmt.Sprintf("Makefile: FUZZ_TARGETS lacks %s:%s, so make fuzz never runs it", t.pkg, t.name))
		}
		if !strings.Contains(fuzzingMD, "`"+t.name+"`") {
			problems = append(problems, fmt.Sprintf("docs/fuzzing.md does not name %s (%s)", t.name, t.pkg))
		}
	}
	for t := range listed {
		if !inTree[t] {
			problems = append(problems, fmt.Sprintf("Makefile: FUZZ_TARGETS names %s:%s, which is not in the tree", t.pkg, t.name))
		}
	}
	sort.Strings(problems)
	return problems
}

// slackSubcommands reads the subcommands handleCommand answers: the case
// labels of its switch on sub ("" is /approvals alone).
func slackSubcommands(src string) ([]string, error) {
	file, err := parser.ParseFile(token.NewFileSet(), "commands.go", src, 0)
	if err != nil {
		return nil, err
	}
	var out []string
	ast.Inspect(file, func(n ast.Node) bool {
		fd, ok := n.(*ast.FuncDecl)
		if !ok || fd.Name.Name != "handleCommand" {
			return true
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			sw, ok := n.(*ast.SwitchStmt)
			if !ok {
				return true
			}
			if id, ok := sw.Tag.(*ast.Ident); !ok || id.Name != "sub" {
				return true
			}
			for _, st := range sw.Body.List {
				for _, e := range st.(*ast.CaseClause).List {
					if s, ok := stringLit(e); ok && s != "" {
						out = append(out, s)
					}
				}
			}
			return false
		})
		return false
	})
	sort.Strings(out)
	return out, nil
}

var usageHintRE = regexp.MustCompile(`(?m)^\s*usage_hint:\s*(.+?)\s*$`)

// checkSlackHint: the manifest's usage hint for /approvals names exactly
// the subcommands the code answers, and docs/slack.md shows each.
func checkSlackHint(manifest string, handled []string, slackMD string) []string {
	m := usageHintRE.FindStringSubmatch(manifest)
	if m == nil {
		return []string{"deploy/slack-manifest.yaml: no usage_hint"}
	}
	var hint []string
	depth, word := 0, true
	for _, f := range strings.FieldsFunc(strings.Trim(m[1], `"'`), func(r rune) bool { return r == ' ' }) {
		if word && depth == 0 && f != "|" {
			hint = append(hint, f)
		}
		depth += strings.Count(f, "[") - strings.Count(f, "]")
		word = f == "|" && depth == 0
	}
	sort.Strings(hint)
	var problems []string
	if strings.Join(hint, " ") != strings.Join(handled, " ") {
		problems = append(problems, fmt.Sprintf("deploy/slack-manifest.yaml: usage_hint names %v; the code answers %v", hint, handled))
	}
	for _, h := range handled {
		if !strings.Contains(slackMD, "/approvals "+h) {
			problems = append(problems, fmt.Sprintf("docs/slack.md does not show /approvals %s", h))
		}
	}
	return problems
}

var internalRefRE = regexp.MustCompile(`SPEC\s*§|\.\./shared/|shared/SPEC`)

// checkStandAlone: the docs cite nothing a reader of the repository does
// not have (the project's SPEC, ../shared/…).
func checkStandAlone(files []docFile) []string {
	var problems []string
	for _, f := range files {
		for i, l := range strings.Split(f.text, "\n") {
			if m := internalRefRE.FindString(l); m != "" {
				problems = append(problems, fmt.Sprintf("%s:%d: cites %q, which is not in the repository", f.path, i+1, m))
			}
		}
	}
	return problems
}

var schemaVersionRE = regexp.MustCompile(`"schema_version"\s*:\s*([0-9]+)`)

// checkSchemaVersion: what the docs show `gateway migrate` printing is the
// schema version this build migrates to.
func checkSchemaVersion(files []docFile, want int) []string {
	var problems []string
	for _, f := range files {
		for i, l := range strings.Split(f.text, "\n") {
			for _, m := range schemaVersionRE.FindAllStringSubmatch(l, -1) {
				if m[1] != strconv.Itoa(want) {
					problems = append(problems, fmt.Sprintf("%s:%d: schema_version %s; gateway migrate prints %d", f.path, i+1, m[1], want))
				}
			}
		}
	}
	return problems
}

// checkIndexed: the README, the front door, links every page of docs/.
func checkIndexed(files []docFile) []string {
	readme := ""
	for _, f := range files {
		if f.path == "README.md" {
			readme = f.text
		}
	}
	var problems []string
	for _, f := range files {
		if strings.HasPrefix(f.path, "docs/") && !strings.Contains(readme, "]("+f.path+")") {
			problems = append(problems, fmt.Sprintf("README.md does not link %s (add it to the Documentation table)", f.path))
		}
	}
	return problems
}
