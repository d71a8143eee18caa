package policy

import (
	"strconv"
	"testing"
)

// TestTraceWords: the words written into one buffer read as they did
// when each was written on its own, also those cut before later words
// were written (the room reserved or not).
func TestTraceWords(t *testing.T) {
	for _, agent := range []string{"metnos", "", `a "quoted" agent`, "ü\x00\n" + string(make([]byte, 80))} {
		for _, requested := range []Level{0, ReadOnly, Supervised, Full} {
			for _, ceiling := range []Level{ReadOnly, Supervised, Full, Level(9)} {
				level := ceiling
				if requested != 0 {
					level = MinLevel(requested, ceiling)
				}
				var w traceWords
				profile, table := w.profileAndTable(agent, requested, ceiling, level, "fs:read", int(requested)*20)
				reason, detail := w.grant(7, "/home/r/*", "telegram", "roberto")
				if reason != "allowed by grant #7 (/home/r/*)" || detail != "grant #7 for telegram/roberto covers the target" {
					t.Errorf("grant words after the profile's: %q, %q", reason, detail)
				}
				wantProfile := "agent " + strconv.Quote(agent) + ": requested " + levelOr(requested, "default") +
					", ceiling " + ceiling.String() + ", effective " + level.String()
				if profile != wantProfile || table != "fs:read at "+level.String() {
					t.Errorf("profileAndTableWords(%q, %v, %v) = %q, %q; want %q, %q", agent, requested, ceiling,
						profile, table, wantProfile, "fs:read at "+level.String())
				}
			}
		}
	}
	for _, id := range []int64{1, 12, 1 << 62, -3} {
		for _, target := range []string{"/home/r/*", "", "*.example.org"} {
			var w traceWords
			reason, detail := w.grant(id, target, "telegram", "roberto")
			n := strconv.FormatInt(id, 10)
			if want := "allowed by grant #" + n + " (" + target + ")"; reason != want {
				t.Errorf("reason = %q, want %q", reason, want)
			}
			if want := "grant #" + n + " for telegram/roberto covers the target"; detail != want {
				t.Errorf("detail = %q, want %q", detail, want)
			}
		}
	}
}

// TestAppendQuoted: what strconv.AppendQuote writes, for every string of
// one or two bytes and some longer ones.
func TestAppendQuoted(t *testing.T) {
	check := func(s string) {
		if got, want := string(appendQuoted(nil, s)), strconv.Quote(s); got != want {
			t.Fatalf("appendQuoted(%q) = %s, want %s", s, got, want)
		}
	}
	for a := range 256 {
		check(string([]byte{byte(a)}))
		for b := range 256 {
			check(string([]byte{byte(a), byte(b)}))
		}
	}
	for _, s := range []string{"", "metnos", "claude-code", `a "quoted" agent`, `back\slash`, "tab\there", "ü", "a b~c"} {
		check(s)
	}
}

// TestCachedProfileWords: the profile and table words from the cache are
// what profileAndTable writes, on the miss that fills it and on every hit
// after, for more combinations than the cache holds (past its bound they
// are written each time, and the cache stays at its bound).
func TestCachedProfileWords(t *testing.T) {
	check := func(agent string, requested, ceiling Level, capability string) {
		level := ceiling
		if requested != 0 {
			level = MinLevel(requested, ceiling)
		}
		var fresh traceWords
		wantProfile, wantTable := fresh.profileAndTable(agent, requested, ceiling, level, capability, 0)
		for range 2 {
			var w traceWords
			profile, table := cachedProfileWords(&w, agent, requested, ceiling, level, capability, 40)
			if profile != wantProfile || table != wantTable {
				t.Fatalf("cachedProfileWords(%q, %v, %v, %q) = %q, %q; want %q, %q", agent, requested, ceiling, capability,
					profile, table, wantProfile, wantTable)
			}
			// Words written after them do not change them.
			w.grant(7, "/home/r/*", "telegram", "roberto")
			if profile != wantProfile || table != wantTable {
				t.Fatalf("after later words: %q, %q; want %q, %q", profile, table, wantProfile, wantTable)
			}
		}
	}
	for i := range maxProfileWords + 40 {
		agent := "agent-" + strconv.Itoa(i%100)
		if i%7 == 0 {
			agent = `a "quoted" ` + agent
		}
		for _, requested := range []Level{0, ReadOnly, Supervised, Full} {
			for _, ceiling := range []Level{ReadOnly, Supervised, Full} {
				check(agent, requested, ceiling, []string{"fs:read", "network:http", "code:exec"}[i%3])
			}
		}
	}
	if n := lenOf(profileWordsCache.Load()); n > maxProfileWords {
		t.Fatalf("the cache holds %d combinations, over its bound %d", n, maxProfileWords)
	}
}
