package locale

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var verbRE = regexp.MustCompile(`%(\[\d+\])?[-+# 0]*\d*(\.\d+)?[a-zA-Z%]`)

// verbs is the sorted list of fmt verbs in s, argument indexes dropped:
// a translation may reorder its arguments but must take the same ones.
func verbs(s string) []string {
	var out []string
	for _, v := range verbRE.FindAllString(s, -1) {
		if v == "%%" {
			continue
		}
		out = append(out, regexp.MustCompile(`\[\d+\]`).ReplaceAllString(v, ""))
	}
	slices.Sort(out)
	return out
}

// TestCatalogs fails when a message exists in one language and not in
// another, or when the two take different arguments.
func TestCatalogs(t *testing.T) {
	for _, a := range Langs() {
		for _, b := range Langs() {
			if a == b {
				continue
			}
			for key, text := range catalogs[a] {
				other, ok := catalogs[b][key]
				if !ok {
					t.Errorf("%q is in the %s catalog but not in the %s one", key, a, b)
					continue
				}
				if va, vb := verbs(text), verbs(other); !slices.Equal(va, vb) {
					t.Errorf("%q takes %v in %s but %v in %s", key, va, a, vb, b)
				}
			}
		}
	}
}

// TestCatalogs_CoverTheCode finds every message key the code names (calls of
// a method T with a literal key in the module's Go files, {{t "key"}} in its
// templates) and fails for any that a catalog lacks.
func TestCatalogs_CoverTheCode(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]string{} // key → where
	tmplRE := regexp.MustCompile(`\bt "([^"]+)"`)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		switch {
		case strings.HasSuffix(path, ".html"):
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range tmplRE.FindAllStringSubmatch(string(b), -1) {
				used[m[1]] = rel
			}
		case strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go"):
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) == 0 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "T" {
					return true
				}
				if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if key, err := strconv.Unquote(lit.Value); err == nil {
						used[key] = rel
					}
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(used) < 100 {
		t.Fatalf("found only %d keys in use; is the scan broken?", len(used))
	}
	for key, where := range used {
		for _, l := range Langs() {
			if _, ok := catalogs[l][key]; !ok {
				t.Errorf("%s uses %q, which the %s catalog lacks", where, key, l)
			}
		}
	}
}

func TestDayAndMonthNames(t *testing.T) {
	for _, l := range Langs() {
		for d := time.Sunday; d <= time.Saturday; d++ {
			key := "time.weekdays." + strings.ToLower(d.String()[:3])
			if _, ok := catalogs[l][key]; !ok {
				t.Errorf("%s lacks %s", l, key)
			}
		}
		for m := time.January; m <= time.December; m++ {
			key := "time.months." + strings.ToLower(m.String()[:3])
			if _, ok := catalogs[l][key]; !ok {
				t.Errorf("%s lacks %s", l, key)
			}
		}
	}
}

func TestTimes(t *testing.T) {
	rome, err := time.LoadLocation("Europe/Rome")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 23, 18, 51, 0, 0, time.UTC) // 19:51 in Rome
	clock := func() time.Time { return now }
	en, it := New(English, rome, clock), New(Italian, rome, clock)
	at := time.Date(2026, 11, 23, 19, 0, 30, 0, time.UTC) // 20:00 CET
	cases := []struct{ name, got, want string }{
		{"en expires", en.Expires(at), "expires in 9 min, 20:00 CET"},
		{"it expires", it.Expires(at), "scade tra 9 min, 20:00 CET"},
		{"en expired", en.Expires(now.Add(-time.Minute)), "expired at 19:50 CET"},
		{"en tomorrow", en.Clock(at.Add(24 * time.Hour)), "Tue 24 Nov 20:00 CET"},
		{"it tomorrow", it.Clock(at.Add(24 * time.Hour)), "mar 24 nov 20:00 CET"},
		{"summer time", en.Clock(time.Date(2027, 7, 1, 10, 0, 0, 0, time.UTC)), "1 Jul 2027 12:00 CEST"},
		{"en date", en.Date(at), "23 Nov 2026"},
		{"it date", it.Date(at), "23 nov 2026"},
		{"in hours", en.In(3*time.Hour + 5*time.Minute), "in 3 h 5 min"},
		{"in days", it.In(72 * time.Hour), "tra 3 giorni"},
		{"past is now", it.In(-time.Minute), "ora"},
		{"utc by default", Locale{}.Clock(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)), "1 Jan 2000 00:00 UTC"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Errorf("got %q, want %q", c.got, c.want)
			}
		})
	}
}

func TestParseLang(t *testing.T) {
	for in, want := range map[string]Lang{"": English, "en": English, "it": Italian} {
		if got, err := ParseLang(in); err != nil || got != want {
			t.Errorf("ParseLang(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseLang("fr"); err == nil || !strings.Contains(err.Error(), "en or it") {
		t.Errorf("ParseLang(fr) = %v", err)
	}
}

func TestT_FallsBack(t *testing.T) {
	if got := New(Italian, nil, nil).T("no.such.key"); got != "no.such.key" {
		t.Errorf("got %q", got)
	}
}
