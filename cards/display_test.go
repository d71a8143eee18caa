package cards

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/metnos/gateway/locale"
)

func TestDisplay(t *testing.T) {
	tests := []struct {
		name, in, want string
		notice         Notice
	}{
		{"plain", "git status --short", "git status --short", 0},
		{"newlines and tabs stay", "a\n\tb\n\nc", "a\n\tb\n\nc", 0},
		{"bidi override", "cat notes\u202E\u2066hs.txt", "cat notes⟦U+202E⟧⟦U+2066⟧hs.txt", NoticeEscaped},
		{"zero width", "a\u200Bb\u200Cc\u200Dd\u200Ee\u200Ff\u2060g\uFEFFh", "a⟦U+200B⟧b⟦U+200C⟧c⟦U+200D⟧d⟦U+200E⟧e⟦U+200F⟧f⟦U+2060⟧g⟦U+FEFF⟧h", NoticeEscaped},
		{"controls", "a\rb\x1b[2Kc\x7f", "a⟦U+000D⟧b⟦U+001B⟧[2Kc⟦U+007F⟧", NoticeEscaped},
		{"C1 control", "a\u0085b", "a⟦U+0085⟧b", NoticeEscaped},
		{"tag characters", "x\U000E0041\U000E0042", "x⟦U+E0041⟧⟦U+E0042⟧", NoticeEscaped},
		{"soft hyphen", "pay\u00ADpal", "pay⟦U+00AD⟧pal", NoticeEscaped},
		{"no-break and other spaces", "rm\u00A0-rf\u2003x\u3000y", "rm⟦U+00A0⟧-rf⟦U+2003⟧x⟦U+3000⟧y", NoticeEscaped},
		{"line separators", "a\u2028b\u2029c", "a⟦U+2028⟧b⟦U+2029⟧c", NoticeEscaped},
		{"hangul filler and braille blank", "a\u3164b\u2800c", "a⟦U+3164⟧b⟦U+2800⟧c", NoticeEscaped},
		{"variation selector", "a\uFE0Fb", "a⟦U+FE0F⟧b", NoticeEscaped},
		{"unassigned", "a\U0003FFFEb", "a⟦U+3FFFE⟧b", NoticeEscaped},
		{"invalid UTF-8", "/tmp/\xff\xfe", "/tmp/⟦0xFF⟧⟦0xFE⟧", NoticeEscaped},
		{"look-alike escape", "⟦U+202E⟧", "⟦U+27E6⟧U+202E⟦U+27E7⟧", NoticeEscaped},
		{"visible Unicode stays", "münchen.de раураl.com 😀 ✅", "münchen.de раураl.com 😀 ✅", 0},
		{"padding", "ls" + strings.Repeat(" ", 400) + "; rm -rf ~", "ls⟦400 spaces⟧; rm -rf ~", NoticeBlanks},
		{"tab padding", "ls" + strings.Repeat("\t", 20) + "x", "ls⟦20 tabs⟧x", NoticeBlanks},
		{"mixed padding", "ls" + strings.Repeat(" \t", 10) + "x", "ls⟦20 spaces and tabs⟧x", NoticeBlanks},
		{"short run stays", "a" + strings.Repeat(" ", MaxBlankRun) + "b", "a" + strings.Repeat(" ", MaxBlankRun) + "b", 0},
		{"line break padding", "ls" + strings.Repeat("\n", 50) + "rm -rf ~", "ls\n⟦50 line breaks⟧\nrm -rf ~", NoticeBlanks},
		{"both", "a\u202E" + strings.Repeat(" ", 5000) + "b", "a⟦U+202E⟧⟦5,000 spaces⟧b", NoticeEscaped | NoticeBlanks},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, n := Display(tt.in)
			if got != tt.want || n != tt.notice {
				t.Errorf("Display(%q) = %q, %b; want %q, %b", tt.in, got, n, tt.want, tt.notice)
			}
		})
	}
}

// invisible is the test's own idea of a character a person cannot see:
// every Cf, Cc but line feed and tab, Zl, Zp, Zs but the space.
func invisible(r rune) bool {
	return unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) ||
		unicode.Is(unicode.Cc, r) && r != '\n' && r != '\t' ||
		unicode.Is(unicode.Zs, r) && r != ' ' ||
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r)
}

// FuzzDisplay: whatever comes in, what comes out is valid UTF-8 with no
// invisible character, no run of blanks longer than MaxBlankRun, every
// ⟦ is one of ours, and a text that needed nothing comes out unchanged.
func FuzzDisplay(f *testing.F) {
	for _, s := range []string{"", "a", "cat notes\u202E\u2066hs.txt; wget http://203.0.113.9/r", "\xff⟦⟧", "a\u200d\U000E0041",
		strings.Repeat(" ", 40) + "x", "\n\n\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, n := Display(s)
		if !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 out of %q: %q", s, out)
		}
		for _, r := range out {
			if invisible(r) || hidden(r) {
				t.Fatalf("%U survives in %q (from %q)", r, out, s)
			}
		}
		if strings.Contains(out, strings.Repeat(" ", MaxBlankRun+1)) {
			t.Fatalf("a long blank run survives in %q", out)
		}
		if strings.Count(out, "⟦") != strings.Count(out, "⟧") {
			t.Fatalf("unbalanced escapes in %q", out)
		}
		if n == 0 && out != s {
			t.Fatalf("changed %q to %q with no notice", s, out)
		}
		if n != 0 && out == s {
			t.Fatalf("notice %b for an unchanged %q", n, s)
		}
	})
}

func TestCut(t *testing.T) {
	s := strings.Repeat("a", 5000) + "⟦U+202E⟧" + strings.Repeat("b", 4992) + "; wget http://203.0.113.9/r"
	out, n := Cut(s, 200)
	if utf8.RuneCountInString(out) > 200 || !strings.HasSuffix(out, "wget http://203.0.113.9/r") ||
		!strings.HasPrefix(out, "aaaa") || !strings.Contains(out, " characters cut …⟧ ") {
		t.Errorf("Cut = %q", out)
	}
	if want := utf8.RuneCountInString(s) - utf8.RuneCountInString(out) + utf8.RuneCountInString(cutMarker(n, locale.Locale{})); n != want {
		t.Errorf("reported %d characters cut, want %d", n, want)
	}
	if !strings.Contains(out, cutMarker(n, locale.Locale{})) {
		t.Errorf("marker does not say %d: %q", n, out)
	}
	if out, n := Cut("short", 200); out != "short" || n != 0 {
		t.Errorf("Cut(short) = %q, %d", out, n)
	}
	// An escape is never split, whatever the cut point.
	esc := strings.Repeat("⟦U+202E⟧", 100)
	for max := 40; max < 80; max++ {
		out, _ := Cut(esc, max)
		body := strings.Replace(out, out[strings.Index(out, " ⟦… "):strings.Index(out, " …⟧ ")+len(" …⟧ ")], "", 1)
		if strings.Count(body, "⟦") != strings.Count(body, "⟧") || strings.Count(body, "⟦U+202E⟧")*len("⟦U+202E⟧") != len(body) {
			t.Fatalf("max %d split an escape: %q", max, out)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 10000: "10,000", 1234567: "1,234,567"} {
		if got := thousands(n, locale.Locale{}); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
	if got := thousands(10000, locale.New(locale.Italian, nil, nil)); got != "10.000" {
		t.Errorf("Italian thousands = %q", got)
	}
}

// TestDisplayIn_Italian: the words of the escapes and of the cut marker are
// the reader's; the escapes of characters are the same in every language.
func TestDisplayIn_Italian(t *testing.T) {
	it := locale.New(locale.Italian, nil, nil)
	got, n := DisplayIn("ls"+strings.Repeat(" ", 400)+"\u202e; rm -rf ~"+strings.Repeat("\n", 9)+"x", it)
	want := "ls⟦400 spazi⟧⟦U+202E⟧; rm -rf ~\n⟦9 a capo⟧\nx"
	if got != want || n != NoticeBlanks|NoticeEscaped {
		t.Errorf("DisplayIn = %q (%v), want %q", got, n, want)
	}
	out, k := CutIn(strings.Repeat("a", 20000), 100, it)
	if !strings.Contains(out, " ⟦… "+thousands(k, it)+" caratteri tagliati …⟧ ") || !strings.Contains(out, ".") {
		t.Errorf("CutIn = %q", out)
	}
}
