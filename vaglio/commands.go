// The guard's dangerous commands: a command line read as the shell reads it
// (quotes, ~ and $HOME, braces), then rm, chmod, dd to a device, the fork bomb.

package vaglio

import (
	"path"
	"strings"
)

// unquote drops shell quoting characters (a Replacer is safe for concurrent use).
var unquote = strings.NewReplacer(`"`, "", `'`, "", `\`, "")

// quoting are the bytes unquote drops, and globOrBrace those that make a
// path element a pattern (a glob or a brace expansion).
var quoting, globOrBrace = byteSet(`"'\`), byteSet("*?[{")

// asciiSet is a set of ASCII bytes.
type asciiSet [4]uint64

func byteSet(chars string) (set asciiSet) {
	for i := 0; i < len(chars); i++ {
		set[chars[i]/64] |= 1 << (chars[i] % 64)
	}
	return set
}

// hasAnyByte reports whether s holds a byte of set: strings.ContainsAny
// for a set made once, not on every call.
func hasAnyByte(s string, set asciiSet) bool {
	for i := 0; i < len(s); i++ {
		if set[s[i]/64]&(1<<(s[i]%64)) != 0 {
			return true
		}
	}
	return false
}

// shellNormalize undoes what a shell would undo before a command sees its
// arguments, so /etc/pa"ss"wd and /etc/pass\wd read as /etc/passwd, and
// expands $HOME and ${HOME}. Without a home they become "~", which the
// rules still treat as the home directory.
func shellNormalize(s, home string) string {
	if hasAnyByte(s, quoting) {
		s = unquote.Replace(s)
	}
	if strings.IndexByte(s, '$') < 0 {
		return s // no $HOME nor ${HOME}
	}
	h := home
	if h == "" {
		h = "~"
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "${HOME}"):
			b.WriteString(h)
			i += len("${HOME}")
		case strings.HasPrefix(s[i:], "$HOME") && (i+5 == len(s) || !isIdentByte(s[i+5])):
			b.WriteString(h)
			i += len("$HOME")
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

func isIdentByte(c byte) bool {
	return c == '_' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

// expandTilde expands a leading "~" or "~/" the way the shell does, and
// "~user" or "~user/" to that user's home (userHome) when there is one.
func expandTilde(p, home string) string {
	if !strings.HasPrefix(p, "~") {
		return p
	}
	name, rest, _ := strings.Cut(p[1:], "/")
	if name == "" {
		if home == "" {
			return p
		}
		return home + p[1:]
	}
	if h := userHome(name); h != "" {
		if rest == "" && !strings.Contains(p, "/") {
			return h
		}
		return h + "/" + rest
	}
	return p
}

// Brace expansion limits: enough for /etc/{passwd,shadow}, small enough
// that a crafted {a,b}{a,b}{a,b}… cannot make the guard slow. A word longer
// than a target may be (4 KiB) is not expanded at all.
const (
	maxBraceWords     = 64
	maxBraceSteps     = 256
	maxBraceWordBytes = 4096
)

// hasBraces reports whether expandBraces would expand word.
func hasBraces(word string) bool {
	return len(word) <= maxBraceWordBytes && strings.Contains(word, "{") && strings.Contains(word, ",")
}

// expandBraces does the shell's {a,b} expansion on one word, within the
// limits above; when they are reached the rest is returned unexpanded and
// the braces and commas then split it into parts that are still checked.
func expandBraces(word string) []string {
	if !hasBraces(word) {
		return []string{word}
	}
	var out []string
	steps := 0
	var expand func(s string)
	expand = func(s string) {
		steps++
		if len(out) >= maxBraceWords {
			return
		}
		if steps > maxBraceSteps {
			out = append(out, s)
			return
		}
		for from := 0; from < len(s); {
			end := strings.IndexByte(s[from:], '}')
			if end < 0 {
				break
			}
			end += from
			open := strings.LastIndexByte(s[:end], '{')
			if open >= 0 && strings.Contains(s[open+1:end], ",") {
				for _, alt := range strings.Split(s[open+1:end], ",") {
					expand(s[:open] + alt + s[end+1:])
				}
				return
			}
			from = end + 1
		}
		out = append(out, s)
	}
	expand(word)
	return out
}

// dangerousCommandIn looks for the shell commands of SPEC §4 step 6 in s,
// anywhere in it (after sudo, inside sh -c "…", after a pipe to xargs), and
// returns the rule's name. $HOME is read as ~ here, so that rm -rf $HOME/x
// is the seed's rm -rf ~/x.
func dangerousCommandIn(s, home string) (rule string, hit bool) {
	s = shellNormalize(s, "")
	if isForkBomb(s) {
		return ":(){ :|:& };:", true
	}
	for seg := range strings.FieldsFuncSeq(s, isCommandSep) {
		var buf [16]string // most commands' words
		words := buf[:0]
		for w := range strings.FieldsSeq(seg) {
			if !hasBraces(w) { // expandBraces would return it alone
				words = append(words, w)
				continue
			}
			words = append(words, expandBraces(w)...)
		}
		for i, w := range words {
			lw := strings.ToLower(w)
			switch cmd := path.Base(lw); {
			case cmd == "rm":
				if rule, hit := rmRule(words[i+1:], home); hit {
					return rule, true
				}
			case cmd == "mkfs" || strings.HasPrefix(cmd, "mkfs."):
				return "mkfs", true
			case cmd == "chmod":
				if rule, hit := chmodRule(words[i+1:], home); hit {
					return rule, true
				}
			}
			if strings.HasPrefix(lw, "of=") && isBlockDevice(expandTilde(w[3:], home)) {
				return "dd of=/dev/…", true
			}
		}
	}
	return "", false
}

// isCommandSep splits a command line into simple commands.
func isCommandSep(r rune) bool {
	return r == '\n' || r == '\r' || strings.ContainsRune(";&|()`", r)
}

// rmRule checks the arguments of one rm. GNU rm reads options anywhere
// before "--" and accepts unambiguous prefixes of long options.
func rmRule(args []string, home string) (rule string, hit bool) {
	recursive, noPreserveRoot, options := false, false, true
	var operands []string
	for _, a := range args {
		switch {
		case options && a == "--":
			options = false
		case options && strings.HasPrefix(a, "--"):
			if len(a) >= 3 && strings.HasPrefix("--recursive", a) {
				recursive = true
			}
			if len(a) >= 3 && strings.HasPrefix("--no-preserve-root", a) {
				noPreserveRoot = true
			}
		case options && len(a) > 1 && a[0] == '-':
			if strings.ContainsAny(a[1:], "rR") {
				recursive = true
			}
		default:
			operands = append(operands, a)
		}
	}
	if noPreserveRoot {
		return "rm --no-preserve-root", true
	}
	if !recursive {
		return "", false
	}
	for _, op := range operands {
		if isRootOrAll(op, home) {
			return "rm -rf /", true
		}
		if isInHome(op, home) {
			return "rm -rf ~", true
		}
	}
	return "", false
}

// chmodRule checks the arguments of one chmod: -R on / with any mode (000
// breaks the system as surely as 777 opens it), and, as the seed's
// chmod -?R? 0?77x /… does, a world-writable 77x mode on any absolute path.
func chmodRule(args []string, home string) (rule string, hit bool) {
	recursive, wide := false, false
	for _, a := range args {
		if a == "--" {
			continue
		}
		if isWideMode(a) {
			wide = true
			continue
		}
		if strings.HasPrefix(a, "--") {
			if len(a) >= 5 && strings.HasPrefix("--recursive", a) {
				recursive = true
			}
			continue
		}
		if len(a) > 1 && a[0] == '-' && strings.Contains(a, "R") {
			recursive = true
		}
	}
	for _, a := range args {
		if recursive && isRootOrAll(a, home) {
			return "chmod -R 777 /", true
		}
		if wide && !isWideMode(a) && strings.HasPrefix(expandTilde(a, home), "/") {
			return "chmod 777 /…", true
		}
	}
	return "", false
}

// isWideMode reports a mode word the seed's -?R?\s*0?77[0-9] matches:
// 770 to 779 with an optional leading 0, also glued to -R (-R0777).
func isWideMode(a string) bool {
	m := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "R")
	m = strings.TrimPrefix(m, "0")
	return len(m) == 3 && m[0] == '7' && m[1] == '7' && '0' <= m[2] && m[2] <= '9'
}

// isRootOrAll reports "/" or a glob of everything under it (/*, /?*).
func isRootOrAll(op, home string) bool {
	p := expandTilde(op, home)
	if !strings.HasPrefix(p, "/") {
		return false
	}
	return coversDir(path.Clean(p), "/", "usr")
}

// isInHome reports the home directory, anything under it written with ~
// (the seed's rm -rf ~/…), or a glob of everything in the home directory
// written out in full.
func isInHome(op, home string) bool {
	if op == "~" || strings.HasPrefix(op, "~/") {
		return true
	}
	if home == "" {
		return false
	}
	return coversDir(path.Clean(op), home, "documents")
}

// coversDir reports whether p is dir itself, or dir/<glob> where the glob
// would match an ordinary entry such as sample.
func coversDir(p, dir, sample string) bool {
	if p == dir {
		return true
	}
	base := path.Base(p)
	if path.Dir(p) != dir || !strings.ContainsAny(base, "*?[") {
		return false
	}
	ok, err := path.Match(strings.ToLower(base), sample)
	return err == nil && ok
}

// isBlockDevice reports a dd output under /dev other than /dev/null, the
// guard's one exception to the seed (dd of=/dev/null only reads, and is a
// common way to time a read).
func isBlockDevice(p string) bool {
	if !strings.HasPrefix(p, "/") {
		return false
	}
	p = path.Clean(p)
	return strings.HasPrefix(p, "/dev/") && p != "/dev/null"
}

// isForkBomb finds f(){ f|f& };f with any function name and any spacing:
// a brace group whose body starts by piping a name into itself.
func isForkBomb(s string) bool {
	t := squeezeShellSpace(s)
	for i := 0; i < len(t); i++ {
		if t[i] != '{' {
			continue
		}
		j := i + 1
		for j < len(t) && !isBombPunct(t[j]) && t[j] != ' ' {
			j++
		}
		name := t[i+1 : j]
		rest := strings.TrimPrefix(t[j:], "|"+name)
		if name != "" && len(rest) < len(t[j:]) && (rest == "" || strings.ContainsRune("&;}", rune(rest[0]))) {
			return true
		}
	}
	return false
}

func isBombPunct(c byte) bool { return strings.IndexByte("(){}|&;", c) >= 0 }

// squeezeShellSpace drops whitespace next to shell punctuation and turns
// other runs of whitespace into one space, so `: | : &` reads as `:|:&`.
func squeezeShellSpace(s string) string {
	var b strings.Builder
	var last byte // last byte written; 0 at the start
	for i := 0; i < len(s); {
		if !isSpaceByte(s[i]) {
			last = s[i]
			b.WriteByte(last)
			i++
			continue
		}
		j := i
		for j < len(s) && isSpaceByte(s[j]) {
			j++
		}
		if last != 0 && j < len(s) && !isBombPunct(last) && !isBombPunct(s[j]) {
			last = ' '
			b.WriteByte(last)
		}
		i = j
	}
	return b.String()
}

func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}
