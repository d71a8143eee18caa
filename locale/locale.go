// Package locale is how the gateway speaks to a person: the language of
// every string a person reads (one message catalog per language, en.go and
// it.go) and the time zone every time is shown in, with its abbreviation.
// Machine-readable times (the API, JSON lines, the audit trail) never pass
// through here: they stay UTC RFC 3339.
//
// A Locale is a value: the zero Locale speaks English in UTC on the system
// clock, so code and tests that do not care still work.
package locale

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Lang is a catalog's language code, as the config's language keys take it.
type Lang string

// The languages there is a catalog for.
const (
	English Lang = "en"
	Italian Lang = "it"
)

// DefaultLang is the language of a surface whose config does not set one.
const DefaultLang = English

// catalogs holds one catalog per language: message key → text with fmt verbs.
var catalogs = map[Lang]map[string]string{English: en, Italian: it}

// Langs lists the languages there is a catalog for, sorted.
func Langs() []Lang {
	out := make([]Lang, 0, len(catalogs))
	for l := range catalogs {
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}

// ParseLang accepts a language there is a catalog for ("" is DefaultLang).
func ParseLang(s string) (Lang, error) {
	if s == "" {
		return DefaultLang, nil
	}
	if _, ok := catalogs[Lang(s)]; ok {
		return Lang(s), nil
	}
	names := make([]string, 0, len(catalogs))
	for _, l := range Langs() {
		names = append(names, string(l))
	}
	return "", fmt.Errorf("unknown language %q (want %s)", s, strings.Join(names, " or "))
}

// Locale is one surface's way of speaking: language, time zone, clock.
type Locale struct {
	lang Lang
	zone *time.Location
	now  func() time.Time
}

// New returns the locale of lang in zone with the clock now. An unknown
// lang is English, a nil zone UTC, a nil now time.Now.
func New(lang Lang, zone *time.Location, now func() time.Time) Locale {
	if _, ok := catalogs[lang]; !ok {
		lang = DefaultLang
	}
	return Locale{lang: lang, zone: zone, now: now}
}

// Lang is the locale's language.
func (l Locale) Lang() Lang {
	if l.lang == "" {
		return DefaultLang
	}
	return l.lang
}

// Zone is the locale's time zone.
func (l Locale) Zone() *time.Location {
	if l.zone == nil {
		return time.UTC
	}
	return l.zone
}

// Now is the locale's clock, in its zone.
func (l Locale) Now() time.Time {
	if l.now == nil {
		return time.Now().In(l.Zone())
	}
	return l.now().In(l.Zone())
}

// T is the message key in the locale's language, formatted with args
// (fmt verbs). A key missing from the language falls back to English, and
// one missing from English to the key itself; TestCatalogs makes both
// impossible for every key the code uses.
func (l Locale) T(key string, args ...any) string {
	s, ok := catalogs[l.Lang()][key]
	if !ok {
		if s, ok = en[key]; !ok {
			s = key
		}
	}
	if len(args) == 0 {
		return s
	}
	return fmt.Sprintf(s, args...)
}

// Clock is an instant as a person reads it: "20:00 CET" today,
// "Tue 24 Nov 20:00 CET" another day of this year, "24 Nov 2027 20:00 CET"
// another year (day and month names in the locale's language).
func (l Locale) Clock(t time.Time) string {
	t = t.In(l.Zone())
	now := l.Now()
	hm := t.Format("15:04 MST")
	switch {
	case sameDay(t, now):
		return hm
	case t.Year() == now.Year():
		return fmt.Sprintf("%s %d %s %s", l.weekday(t.Weekday()), t.Day(), l.month(t.Month()), hm)
	}
	return fmt.Sprintf("%d %s %d %s", t.Day(), l.month(t.Month()), t.Year(), hm)
}

// Date is the day of an instant: "24 Nov 2026" ("24 nov 2026").
func (l Locale) Date(t time.Time) string {
	t = t.In(l.Zone())
	return fmt.Sprintf("%d %s %d", t.Day(), l.month(t.Month()), t.Year())
}

// Expires is an expiry as a person reads it, relative and absolute:
// "expires in 9 min, 20:00 CET", or "expired at 20:00 CET" once past.
func (l Locale) Expires(t time.Time) string {
	if d := t.Sub(l.Now()); d > 0 {
		return l.T("time.expires_in", l.In(d), l.Clock(t))
	}
	return l.T("time.expired_at", l.Clock(t))
}

// In is a duration from now: "in 40 s", "in 9 min", "in 3 h 5 min",
// "in 3 days" ("tra 9 min"); "now" when it is not in the future.
func (l Locale) In(d time.Duration) string {
	switch {
	case d <= 0:
		return l.T("time.now")
	case d < time.Minute:
		return l.T("time.in_s", int(d/time.Second))
	case d < time.Hour:
		return l.T("time.in_min", int(d/time.Minute))
	case d < 48*time.Hour:
		return l.T("time.in_h_min", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return l.T("time.in_days", int(d/(24*time.Hour)))
}

func sameDay(a, b time.Time) bool {
	ay, am, ad := a.Date()
	by, bm, bd := b.Date()
	return ay == by && am == bm && ad == bd
}

func (l Locale) weekday(d time.Weekday) string {
	return l.T("time.weekdays." + strings.ToLower(d.String()[:3]))
}

func (l Locale) month(m time.Month) string {
	return l.T("time.months." + strings.ToLower(m.String()[:3]))
}
