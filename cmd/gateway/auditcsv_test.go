package main

import "testing"

// TestCSVCell: a cell a spreadsheet would read as a formula gets a
// leading ', everything else is written as it is.
func TestCSVCell(t *testing.T) {
	for in, want := range map[string]string{
		`=HYPERLINK("http://x","y")`: `'=HYPERLINK("http://x","y")`,
		"+1+1":                       "'+1+1",
		"-2+3":                       "'-2+3",
		"@SUM(A1)":                   "'@SUM(A1)",
		"\t=1":                       "'\t=1",
		"\r=1":                       "'\r=1",
		"telegram:Roberto (42)":      "telegram:Roberto (42)",
		`{"agent":"a1"}`:             `{"agent":"a1"}`,
		"":                           "",
		"a=b":                        "a=b",
	} {
		if got := csvCell(in); got != want {
			t.Errorf("csvCell(%q) = %q, want %q", in, got, want)
		}
	}
}
