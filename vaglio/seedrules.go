package vaglio

import (
	"regexp"
	"strings"
)

// The seed's guard (Metnos vaglio v1.1, §3) is a list of eleven path
// regexes and six shell regexes, searched in raw strings. The structured
// rules in guard.go read paths and commands the way a shell would (quotes,
// braces, $HOME, .., sudo, --recursive), which catches far more, but a
// structured reading can also miss what a plain regex search sees: a raw
// prefix such as /root/../tmp, or 'rm -rf / after a quote. So the guard
// also runs the seed's own lists, translated to RE2 with Python's
// semantics, as a backstop: whatever the seed blocks, the guard blocks.
//
// Python's re differs from RE2 in three ways that matter here, and the
// translation keeps Python's meaning:
//   - \s is Unicode whitespace in Python (with \v, U+001C–U+001F, U+0085,
//     U+00A0, U+2000–U+200A, …); RE2's \s is only [\t\n\f\r ]. pySpace is
//     Python's set.
//   - $ (no MULTILINE) also matches before a newline that ends the string;
//     pyEnd is that.
//   - \b is Unicode-aware in Python and ASCII in RE2. Every \b in the lists
//     stands next to an ASCII letter, and a character that is not a Unicode
//     word character is not an ASCII one either, so RE2's \b holds wherever
//     Python's does (it may hold in more places, which only blocks more).

const (
	pySpace = `[\t\n\v\f\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]`
	pyEnd   = `\n?\z`
)

// seedRule is one of the seed's regexes with the name the guard's reasons
// use for it (never the matched text).
type seedRule struct {
	name string
	re   *regexp.Regexp
}

func seedRules(names, patterns []string) (rules []seedRule, any *regexp.Regexp) {
	for i, p := range patterns {
		rules = append(rules, seedRule{name: names[i], re: regexp.MustCompile(p)})
	}
	return rules, regexp.MustCompile(`(?:` + strings.Join(patterns, `)|(?:`) + `)`)
}

// seedPathRules are the seed's _FORBIDDEN_PATH_PATTERNS, in its order.
var seedPathRules, seedPathAny = seedRules([]string{
	".ssh",
	"/etc/passwd|shadow|sudoers",
	"/etc/ssh",
	"/root",
	"/boot",
	"/sys",
	"/proc/<n>",
	"/dev/sd|nvme|mmcblk|loop",
	".aws/credentials",
	".config/*/credentials.env",
	".gnupg",
}, []string{
	`(?:^|/)\.ssh(?:/|` + pyEnd + `)`,
	`^/etc/(?:passwd|shadow|sudoers)`,
	`^/etc/ssh(?:/|` + pyEnd + `)`,
	`^/root(?:/|` + pyEnd + `)`,
	`^/boot(?:/|` + pyEnd + `)`,
	`^/sys(?:/|` + pyEnd + `)`,
	`^/proc(?:/[0-9]|` + pyEnd + `)`,
	`^/dev/(?:sd|nvme|mmcblk|loop)`,
	`\.aws/credentials`,
	`\.config/[^/]+/credentials\.env`,
	`\.gnupg(?:/|` + pyEnd + `)`,
})

// seedShellRules are the seed's _DANGEROUS_SHELL_PATTERNS, in its order.
// The dd rule is not among them: it has the one exception the guard allows
// (of=/dev/null) and is checked by seedDD.
var seedShellRules, seedShellAny = seedRules([]string{
	"rm -rf /",
	"rm -rf ~",
	"mkfs",
	":(){ :|:& };:",
	"chmod 777 /…",
}, []string{
	`\brm` + pySpace + `+-rf?` + pySpace + `+/(?:` + pySpace + `|` + pyEnd + `)`,
	`\brm` + pySpace + `+-rf?` + pySpace + `+~(?:` + pySpace + `|` + pyEnd + `|/)`,
	`\bmkfs\b`,
	`:` + pySpace + `*\(` + pySpace + `*\)` + pySpace + `*\{` + pySpace + `*:\|:&` + pySpace + `*\}`,
	`\bchmod` + pySpace + `+-?R?` + pySpace + `*0?77[0-9]` + pySpace + `+/`,
})

// The seed's dd rule is \bdd\s+.*\bof=/dev/ . ddOutput finds the of=/dev/
// part; ddBefore, run on the text before it, says whether a dd reaches it
// on the same line (the seed's .* does not cross a newline, its \s+ does).
var (
	ddOutput = regexp.MustCompile(`\bof=/dev/`)
	ddBefore = regexp.MustCompile(`\bdd` + pySpace + `+.*\z`)
)

// seedPathIn runs the seed's path regexes on s as the seed does: on the
// string with a leading ~ expanded. Because it is not known whether the
// seed's _expand_user expands only a leading ~ (os.path.expanduser) or
// every ~, all three spellings are searched.
func seedPathIn(s, home string) (rule string, hit bool) {
	if rule, hit := seedPathMatch(s); hit {
		return rule, true
	}
	if home == "" || !strings.Contains(s, "~") {
		return "", false
	}
	if s == "~" || strings.HasPrefix(s, "~/") {
		if rule, hit := seedPathMatch(home + s[1:]); hit {
			return rule, true
		}
	}
	return seedPathMatch(strings.ReplaceAll(s, "~", home))
}

// seedPathLiterals holds, for each of the seed's path regexes, a literal
// that every string it matches contains. A string holding none of them
// cannot match any, which spares most strings the regex search (a decision
// runs it on every string of the target and the args).
var seedPathLiterals = []string{".ssh", "/etc/", "/root", "/boot", "/sys", "/proc", "/dev/", ".aws/credentials", ".config/", ".gnupg"}

// mayMatchSeedPath reports whether s holds one of seedPathLiterals: one
// starts at some byte of s that begins one of them.
func mayMatchSeedPath(s string) bool {
	if len(s) <= shortSeedScan {
		return mayMatchSeedPathShort(s)
	}
	// Only the bytes that begin a literal ('.' and '/') are looked at,
	// found by IndexByte rather than byte by byte.
	for _, b := range seedLiteralFirsts {
		for i := strings.IndexByte(s, b); i >= 0; {
			// The byte after b must be one a literal has there.
			if i+1 < len(s) && seedLiteralSeconds[s[i+1]]&(1<<(b%64)) != 0 {
				for _, lit := range seedLiteralsAt[b] {
					if strings.HasPrefix(s[i:], lit) {
						return true
					}
				}
			}
			j := strings.IndexByte(s[i+1:], b)
			if j < 0 {
				break
			}
			i += 1 + j
		}
	}
	return false
}

// shortSeedScan is the longest string mayMatchSeedPath reads byte by
// byte: for one this short, a loop costs less than an IndexByte call per
// '/' and '.'.
const shortSeedScan = 64

// mayMatchSeedPathShort is mayMatchSeedPath, one byte after the other.
func mayMatchSeedPathShort(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		b := s[i]
		if seedLiteralsAt[b] == nil || seedLiteralSeconds[s[i+1]]&(1<<(b%64)) == 0 {
			continue
		}
		for _, lit := range seedLiteralsAt[b] {
			if strings.HasPrefix(s[i:], lit) {
				return true
			}
		}
	}
	return false
}

// seedLiteralsAt is seedPathLiterals by their first byte, and
// seedLiteralFirsts those first bytes. seedLiteralSeconds[c] has bit
// b%64 set when a literal starting with byte b has c as its second byte
// (every literal has two bytes or more).
var seedLiteralsAt, seedLiteralFirsts, seedLiteralSeconds = func() (at [256][]string, firsts []byte, seconds [256]uint64) {
	for _, lit := range seedPathLiterals {
		if at[lit[0]] == nil {
			firsts = append(firsts, lit[0])
		}
		at[lit[0]] = append(at[lit[0]], lit)
		seconds[lit[1]] |= 1 << (lit[0] % 64)
	}
	return at, firsts, seconds
}()

func seedPathMatch(s string) (string, bool) {
	if !mayMatchSeedPath(s) || !seedPathAny.MatchString(s) {
		return "", false
	}
	for _, r := range seedPathRules {
		if r.re.MatchString(s) {
			return r.name, true
		}
	}
	return "", false
}

// seedShellIn runs the seed's shell regexes on s, unchanged (the seed does
// not expand ~ in commands: its rm -rf ~ rule looks for the ~ itself).
func seedShellIn(s string) (rule string, hit bool) {
	if seedShellAny.MatchString(s) {
		for _, r := range seedShellRules {
			if r.re.MatchString(s) {
				return r.name, true
			}
		}
	}
	if seedDD(s) {
		return "dd of=/dev/…", true
	}
	return "", false
}

// seedDD is the seed's \bdd\s+.*\bof=/dev/ except where the output is
// /dev/null: "dd if=disk.img of=/dev/null" only reads, and is the common
// way to time a read. Any other of=/dev/… after a dd on its line blocks.
func seedDD(s string) bool {
	if !strings.Contains(s, "of=/dev/") {
		return false
	}
	for _, m := range ddOutput.FindAllStringIndex(s, -1) {
		if isDevNull(s[m[1]:]) {
			continue
		}
		if ddBefore.MatchString(s[:m[0]]) {
			return true
		}
	}
	return false
}

// isDevNull reports whether rest (what follows "of=/dev/") names /dev/null
// and nothing longer: null, then the end or a character that cannot be part
// of a path.
func isDevNull(rest string) bool {
	tail, ok := strings.CutPrefix(rest, "null")
	if !ok {
		return false
	}
	if tail == "" {
		return true
	}
	c := tail[0]
	return !(isIdentByte(c) || c == '.' || c == '/' || c == '-' || c == '\\' || c >= 0x80)
}
