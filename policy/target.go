package policy

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
)

// MaxTargetBytes is the longest target accepted anywhere. A longer one is
// refused rather than truncated: a truncated path could match a different grant.
const MaxTargetBytes = 4096

// ErrBadTarget is wrapped by every target validation error.
var ErrBadTarget = errors.New("bad target")

// ValidateTarget checks a raw target against its capability: required unless
// the kind is none, no NUL byte, at most MaxTargetBytes.
func ValidateTarget(c Capability, target string) error {
	switch {
	case strings.IndexByte(target, 0) >= 0:
		return fmt.Errorf("%w: contains a NUL byte", ErrBadTarget)
	case len(target) > MaxTargetBytes:
		return fmt.Errorf("%w: %d bytes, over the %d-byte limit", ErrBadTarget, len(target), MaxTargetBytes)
	case target == "" && c.TargetKind != KindNone:
		return fmt.Errorf("%w: %s needs a target (%s)", ErrBadTarget, c.Name, c.TargetKind)
	}
	return nil
}

// ValidateRequestTarget is ValidateTarget for what an agent asks to act
// on (not a grant or rule pattern): a host target must also reduce to a
// well-formed host name, so no executor can read it differently.
func ValidateRequestTarget(c Capability, target string) error {
	if err := ValidateTarget(c, target); err != nil {
		return err
	}
	if c.TargetKind == KindHost {
		if _, err := ParseHost(target); err != nil {
			return fmt.Errorf("%w: %w", ErrBadTarget, err)
		}
	}
	return nil
}

// Normalizer turns raw targets into the form grants and rules are matched
// against. Home is the directory "~" stands for.
type Normalizer struct {
	Home string
}

// Normalize returns the canonical form of a target for its kind:
// path_glob targets are cleaned ("~" expanded, "." and ".." resolved, so
// /a/inv/../../.ssh becomes /.ssh before any glob sees it); hosts are
// lower-cased and URLs reduced to their host; none targets become "*".
func (n Normalizer) Normalize(kind TargetKind, target string) string {
	switch kind {
	case KindPathGlob:
		return n.cleanPath(target)
	case KindHost:
		return hostOf(target)
	case KindNone:
		return "*"
	}
	return target
}

func (n Normalizer) expand(p string) string {
	if n.Home != "" && (p == "~" || strings.HasPrefix(p, "~/")) {
		return n.Home + p[1:]
	}
	return p
}

func (n Normalizer) cleanPath(p string) string { return cleanExpanded(n.expand(p)) }

// cleanExpanded is cleanPath for a path whose "~" is expanded already.
func cleanExpanded(p string) string {
	if p == "" {
		return ""
	}
	if !isClean(p) {
		p = path.Clean(p)
	}
	// A relative path can clean to a leading "~" ("x/../~/.ssh" is ./~/.ssh,
	// not the home directory). Keep it relative so that cleaning a cleaned
	// path (a stored grant is cleaned again when matched) never expands it.
	if p == "~" || strings.HasPrefix(p, "~/") {
		p = "./" + p
	}
	return p
}

// HostOf returns the host a host target names: as written (lower-cased,
// without scheme, user, port or path) and in the canonical form rules and
// grants are matched against ("раураl.com", "xn--l-7sba6dbr.com";
// "0x7f.1", "127.0.0.1"). See ParseHost.
func HostOf(target string) (asWritten, canonical string) {
	if h, err := ParseHost(target); err == nil {
		return h.Written, h.Host
	}
	h := writtenHost(target)
	return h, asciiHost(h)
}

// hostOf reduces a host target to its canonical host (ParseHost). A
// canonical host is returned as it is, without parsing again: a decision
// canonicalises its target once and then matches it against every rule
// and grant. A target ParseHost refuses (a request never gets that far;
// a stored grant or rule might) is reduced leniently, as written.
func hostOf(t string) string {
	if isCanonicalHost(t) {
		return t
	}
	if h, err := ParseHost(t); err == nil {
		return h.Host
	}
	return asciiHost(writtenHost(t))
}

// writtenHost is the lenient reading of a host target ParseHost refuses:
// lower-cased, without scheme, user, port or path.
func writtenHost(t string) string {
	t = strings.TrimSpace(t)
	if _, after, ok := strings.Cut(t, "://"); ok {
		t = after
	}
	if i := strings.IndexAny(t, "/?#"); i >= 0 {
		t = t[:i]
	}
	if i := strings.LastIndex(t, "@"); i >= 0 { // user:pass@host
		t = t[i+1:]
	}
	if strings.HasPrefix(t, "[") { // [v6]:port
		if i := strings.IndexByte(t, ']'); i >= 0 {
			t = t[:i+1]
		}
	} else if h, _, ok := strings.Cut(t, ":"); ok {
		t = h
	}
	return strings.TrimSuffix(strings.ToLower(t), ".")
}

// asciiHost turns an internationalized host name into its ASCII (xn--)
// form, label by label, as browsers and curl look it up (UTS #46, no
// transitional mapping), so rules and grants always match the name the
// request really goes to. A label that is already ASCII, or that holds a
// wildcard, stays as it is; one IDNA refuses is left as is (a request
// naming it is refused by ParseHost).
func asciiHost(h string) string {
	if isASCII(h) {
		return h
	}
	labels := strings.Split(h, ".")
	for i, l := range labels {
		if isASCII(l) || strings.ContainsAny(l, "*?[{") {
			continue
		}
		if a, err := lookupProfile.ToASCII(l); err == nil && a != "" {
			labels[i] = a
		}
	}
	return strings.Join(labels, ".")
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// hasMeta reports whether a pattern uses glob syntax.
func hasMeta(p string) bool { return strings.ContainsAny(p, "*?[{") }

// MatchRule reports whether a rule's target pattern covers a target. Rules are
// broader than grants: "*" (or empty) matches anything; a path pattern with
// a "/" is a segment-aware glob on the cleaned path; "*.example.com" is a
// sub-domain match; any other pattern is a plain glob over the whole
// normalized target in which "*" crosses "/" (so "*password*" catches
// /home/x/password.txt and "git *" catches any git command).
func (n Normalizer) MatchRule(kind TargetKind, pattern, target string) bool {
	if pattern == "" || pattern == "*" || pattern == "**" {
		return true
	}
	return n.matchRuleTo(kind, pattern, n.subject(kind, target))
}

// subject is the form of target that rule and grant patterns match
// against (MatchRule, MatchGrant): the cleaned path, the canonical host,
// or the target as it is. A decision computes it once for every rule and
// every grant it tries.
func (n Normalizer) subject(kind TargetKind, target string) string {
	switch kind {
	case KindPathGlob:
		return n.cleanPath(target)
	case KindHost:
		return hostOf(target)
	}
	return target
}

// matchRuleTo is MatchRule against t, the target's subject.
func (n Normalizer) matchRuleTo(kind TargetKind, pattern, t string) bool {
	if pattern == "" || pattern == "*" || pattern == "**" {
		return true
	}
	switch kind {
	case KindPathGlob:
		if p := n.expand(pattern); strings.Contains(p, "/") {
			p = cleanExpanded(p) // as the target: a leading "~" left unexpanded stays "./~"
			if !hasMeta(p) {
				return p == t
			}
			return globMatch(p, t)
		}
		return wildcard(pattern, t)
	case KindHost:
		p := hostPattern(pattern)
		if strings.HasPrefix(p, "*.") && !strings.ContainsAny(p[2:], "*?") {
			return matchHost(p, t)
		}
		return wildcard(p, t)
	}
	return wildcard(pattern, t)
}

// globMatch is doublestar.Match made byte-exact. doublestar compares runes,
// and every invalid UTF-8 byte decodes to the same utf8.RuneError, so alone
// it lets "/a/in\x95/*" cover "/a/in\x84/x", another directory. When either
// side holds an invalid byte (or a literal U+FFFD), the pattern must match
// again with each non-ASCII byte spelled as a rune of its own: the answer
// can only get narrower. An absolute pattern never covers a target that is
// not absolute: doublestar lets "/**" match "", which is no path under "/".
func globMatch(p, t string) bool {
	if strings.HasPrefix(p, "/") && !strings.HasPrefix(t, "/") {
		return false
	}
	ok, err := doublestar.Match(p, t)
	if err != nil || !ok {
		return false
	}
	if !strings.ContainsRune(p, utf8.RuneError) && !strings.ContainsRune(t, utf8.RuneError) {
		return true
	}
	ok, err = doublestar.Match(byteRunes(p), byteRunes(t))
	return err == nil && ok
}

// byteRunes spells each non-ASCII byte of s as the rune U+0100+byte: one
// rune per byte, distinct for distinct bytes, glob syntax (ASCII) kept.
func byteRunes(s string) string {
	var b strings.Builder
	b.Grow(2 * len(s))
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < utf8.RuneSelf {
			b.WriteByte(c)
		} else {
			b.WriteRune(0x100 + rune(c))
		}
	}
	return b.String()
}

// GrantTarget decides what Allow always writes: the suggested pattern when
// it covers the target and is no wider than the capability allows, else the
// target itself (normalized). What "allowed" means per kind:
//   - path_glob: an absolute pattern with wildcards only in its last
//     segment and no "**": at most one directory's entries.
//   - host: the host itself, or "*.parent" where parent has two labels or more.
//   - exact: only the target itself.
//   - none: "*" (capability-wide) always.
//
// The second result says whether the suggestion was taken.
func (n Normalizer) GrantTarget(kind TargetKind, target, suggested string) (string, bool) {
	norm := n.Normalize(kind, target)
	if kind == KindPathGlob && hasMeta(norm) {
		// A glob request (a search for /w/**/*.go) is granted as that
		// search only: its pattern, escaped, matches the same pattern and
		// no file it could match, so a plain read it did not ask about is
		// never allowed by it.
		return literalGlob(norm), false
	}
	if suggested == "" || kind == KindNone || kind == KindExact {
		return norm, false
	}
	if !n.MatchGrant(kind, suggested, target) {
		return norm, false
	}
	switch kind {
	case KindPathGlob:
		p := n.cleanPath(suggested)
		dir, last := path.Split(p)
		if !strings.HasPrefix(p, "/") || hasMeta(dir) || strings.Contains(last, "**") || dir == "/" && hasMeta(last) ||
			classMayMatchSlash(last) {
			return norm, false
		}
		return p, true
	case KindHost:
		p := hostPattern(suggested)
		if rest, ok := strings.CutPrefix(p, "*."); ok {
			if strings.Count(rest, ".") < 1 || hasMeta(rest) || isPublicSuffix(rest) {
				return norm, false
			}
		} else if hasMeta(p) {
			return norm, false
		}
		return p, true
	}
	return norm, false
}

// literalGlob escapes every glob character of a path, so that as a
// pattern it matches that text only.
func literalGlob(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if strings.IndexByte("*?[]{}\\", p[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// classMayMatchSlash reports whether a pattern segment has a character
// class that could match "/" (doublestar lets "[^a]" and "[.-0]" do so,
// which would carry a one-directory grant into sub-directories): a negated
// class or a range. A class that merely lists characters is fine.
func classMayMatchSlash(seg string) bool {
	for i := strings.IndexByte(seg, '['); i >= 0 && i+2 <= len(seg); {
		body := seg[i+1:]
		j := strings.IndexByte(body[1:], ']') + 1 // a "]" right after "[" is a member
		if j == 0 {
			j = len(body)
		}
		if strings.ContainsAny(body[:j], "^!-\\") {
			return true
		}
		k := strings.IndexByte(body[j:], '[')
		if k < 0 {
			break
		}
		i += 1 + j + k
	}
	return false
}
