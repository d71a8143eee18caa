package main

import (
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The README's package map (its "## Package map" table) against the
// module's packages as `go list ./...` finds them: each row's first cell
// names packages by path (`gateway/push`), each of them a package of the
// module; every package is named there, or, when it is a test helper
// (its name ends in "test"), named in the row of a package above it (by
// its name, `pushtest`, or its path).

var (
	mapRowRE  = regexp.MustCompile(`(?m)^\|\s*(.*?)\s*\|(.*)\|\s*$`)
	backtickR = regexp.MustCompile("`([^`]+)`")
)

// packageMapRows reads the table under "## Package map": for each row the
// packages its first cell names and the whole row's text.
func packageMapRows(readme string) (rows []mapRow, ok bool) {
	_, rest, found := strings.Cut(readme, "\n## Package map\n")
	if !found {
		return nil, false
	}
	if end := strings.Index(rest, "\n## "); end >= 0 {
		rest = rest[:end]
	}
	for _, m := range mapRowRE.FindAllStringSubmatch(rest, -1) {
		if m[1] == "package" || strings.Trim(m[1], "-") == "" {
			continue // the header and its rule
		}
		var r mapRow
		for _, b := range backtickR.FindAllStringSubmatch(m[1], -1) {
			r.named = append(r.named, b[1])
		}
		for _, b := range backtickR.FindAllStringSubmatch(m[0], -1) {
			r.mentioned = append(r.mentioned, b[1])
		}
		rows = append(rows, r)
	}
	return rows, true
}

type mapRow struct {
	named     []string // the first cell's packages
	mentioned []string // every backticked word of the row
}

// checkPackageMap says what the map misses or names wrongly, one problem a
// line; pkgs are the module's packages, relative to the module.
func checkPackageMap(readme string, pkgs []string) []string {
	rows, ok := packageMapRows(readme)
	if !ok {
		return []string{`README.md has no "## Package map"`}
	}
	var problems []string
	listed := map[string]bool{}
	for _, r := range rows {
		for _, n := range r.named {
			if !slices.Contains(pkgs, n) {
				problems = append(problems, "README.md's package map names "+n+", which is no package of the module")
			}
			listed[n] = true
		}
	}
	helperNamed := func(p string) bool {
		for _, r := range rows {
			for _, n := range r.named {
				if strings.HasPrefix(p, n+"/") && (slices.Contains(r.mentioned, path.Base(p)) || slices.Contains(r.mentioned, p)) {
					return true
				}
			}
		}
		return false
	}
	for _, p := range pkgs {
		if listed[p] || strings.HasSuffix(path.Base(p), "test") && helperNamed(p) {
			continue
		}
		problems = append(problems, "README.md's package map does not name package "+p)
	}
	return problems
}

// modulePackages are the module's packages as `go list ./...` finds them,
// relative to the module ("gateway/push").
func modulePackages(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.Module.Path}} {{.ImportPath}}", "./...")
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	var pkgs []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		mod, imp, _ := strings.Cut(line, " ")
		if rel, ok := strings.CutPrefix(imp, mod+"/"); ok {
			pkgs = append(pkgs, rel)
		}
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list ./... found too few packages to check against: %q", pkgs)
	}
	return pkgs
}

// TestDocsPackageMap: the README's package map names every package of the
// module and nothing else.
func TestDocsPackageMap(t *testing.T) {
	for _, p := range checkPackageMap(readRepoFile(t, "README.md"), modulePackages(t)) {
		t.Error(p)
	}
}

// TestDocsPackageMapCatchPlanted: the check passes a whole map and finds a
// package left out, a name that is no package and a helper nobody names.
func TestDocsPackageMapCatchPlanted(t *testing.T) {
	pkgs := []string{"cards", "storage", "storage/storagetest", "gateway/push", "gateway/push/pushtest"}
	readme := "# x\n\n## Package map\n\n| package | what it is |\n|---|---|\n| `cards` | rendering |\n" +
		"| `storage` | the database; `storagetest`: a fresh one |\n| `gateway/push` | Web Push; `gateway/push/pushtest` a fake |\n\n## Next\n\n| `nothere` | x |\n"
	if p := checkPackageMap(readme, pkgs); len(p) != 0 {
		t.Errorf("a whole map: %q", p)
	}
	for _, tc := range []struct{ name, readme string }{
		{"a package left out", strings.Replace(readme, "| `cards` | rendering |\n", "", 1)},
		{"a name that is no package", strings.Replace(readme, "`cards`", "`cards`, `carts`", 1)},
		{"a helper nobody names", strings.Replace(readme, "; `storagetest`: a fresh one", "", 1)},
		{"no map", strings.Replace(readme, "## Package map", "## Packages", 1)},
	} {
		if p := checkPackageMap(tc.readme, pkgs); len(p) != 1 {
			t.Errorf("%s: %q, want one problem", tc.name, p)
		}
	}
}
