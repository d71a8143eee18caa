package vaglio

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode"

	"github.com/metnos/gateway/internal/shell"
)

// CapabilityCodeExec is the capability whose target and args are shell
// commands, and so the only one the shell rules of the guard apply to.
const CapabilityCodeExec = "code:exec"

// component is one path element of a forbidden path.
type component struct {
	pat     string // path.Match pattern against a lower-case element
	example string // a name pat matches, to test a glob in the input against
	// except are names pat matches that the rule leaves alone (the safe
	// devices of /dev/*).
	except []string
}

// pathRule is one forbidden path. Anchored rules start at the root
// (/etc/passwd); the others match anywhere in a path (~/.ssh, /srv/x/.ssh).
type pathRule struct {
	name     string // shown in reasons; names the rule, never the input
	anchored bool
	whole    bool // the path must end after comps (/proc itself)
	comps    []component
}

func lit(s string) component             { return component{pat: s, example: s} }
func glob(pat, example string) component { return component{pat: pat, example: example} }

// safeDevices are the entries of /dev an agent may name: no disk, no
// memory, nothing that reaches the hardware. Everything else under /dev
// (sd*, vd*, xvd*, nvme*, dm-*, mapper/, disk/, mem, kmem, port, …) is
// forbidden.
var safeDevices = []string{"null", "zero", "random", "urandom", "full", "tty", "stdin", "stdout", "stderr", "fd", "pts", "shm"}

// forbiddenPaths is the closed list of SPEC §4 step 6, read as the seed's
// regexes read it (vaglio v1.1 §3): /etc/passwd, /etc/shadow, /etc/sudoers
// and the /dev disks are prefixes (/etc/shadow.old, /etc/sudoers.d,
// /dev/sda1), .aws/credentials, .config/*/credentials.env and .gnupg may
// end a longer name (x.aws/credentials.bak), /proc is refused itself and
// with any entry starting with a digit. It is not configurable on purpose:
// the guard is the layer no rule or grant can loosen.
var forbiddenPaths = []pathRule{
	{name: "/etc/passwd*", anchored: true, comps: []component{lit("etc"), glob("passwd*", "passwd")}},
	{name: "/etc/shadow*", anchored: true, comps: []component{lit("etc"), glob("shadow*", "shadow")}},
	{name: "/etc/sudoers*", anchored: true, comps: []component{lit("etc"), glob("sudoers*", "sudoers")}},
	{name: "/etc/ssh", anchored: true, comps: []component{lit("etc"), lit("ssh")}},
	{name: "/root", anchored: true, comps: []component{lit("root")}},
	{name: "/boot", anchored: true, comps: []component{lit("boot")}},
	{name: "/sys", anchored: true, comps: []component{lit("sys")}},
	{name: "/proc", anchored: true, whole: true, comps: []component{lit("proc")}},
	{name: "/proc/<n>", anchored: true, comps: []component{lit("proc"), glob("[0-9]*", "1")}},
	{name: "/proc/self", anchored: true, comps: []component{lit("proc"), lit("self")}},
	{name: "/proc/self", anchored: true, comps: []component{lit("proc"), lit("thread-self")}},
	{name: "/dev/sd*", anchored: true, comps: []component{lit("dev"), glob("sd*", "sda")}},
	{name: "/dev/nvme*", anchored: true, comps: []component{lit("dev"), glob("nvme*", "nvme0n1")}},
	{name: "/dev/mmcblk*", anchored: true, comps: []component{lit("dev"), glob("mmcblk*", "mmcblk0")}},
	{name: "/dev/loop*", anchored: true, comps: []component{lit("dev"), glob("loop*", "loop0")}},
	// A machine that runs agents: every device but the safe ones, kernel
	// memory, group passwords, old passwords, service-account tokens,
	// private TLS keys.
	{name: "/dev/<device>", anchored: true, comps: []component{lit("dev"), {pat: "*", example: "vda", except: safeDevices}}},
	{name: "/proc/kcore", anchored: true, comps: []component{lit("proc"), lit("kcore")}},
	{name: "/proc/sysrq-trigger", anchored: true, comps: []component{lit("proc"), lit("sysrq-trigger")}},
	{name: "/etc/gshadow*", anchored: true, comps: []component{lit("etc"), glob("gshadow*", "gshadow")}},
	{name: "/etc/security/opasswd", anchored: true, comps: []component{lit("etc"), lit("security"), glob("opasswd*", "opasswd")}},
	{name: "/etc/ssl/private", anchored: true, comps: []component{lit("etc"), lit("ssl"), lit("private")}},
	{name: "/etc/pki/tls/private", anchored: true, comps: []component{lit("etc"), lit("pki"), lit("tls"), lit("private")}},
	{name: "/run/secrets", anchored: true, comps: []component{lit("run"), lit("secrets")}},
	{name: "/run/secrets", anchored: true, comps: []component{lit("var"), lit("run"), lit("secrets")}},
	{name: ".ssh", comps: []component{lit(".ssh")}},
	{name: ".aws/credentials", comps: []component{glob("*.aws", ".aws"), glob("credentials*", "credentials")}},
	{name: ".config/*/credentials.env", comps: []component{glob("*.config", ".config"), glob("*", "metnos"), glob("credentials.env*", "credentials.env")}},
	{name: ".gnupg", comps: []component{glob("*.gnupg", ".gnupg")}},
}

// ExecutorShellExec is the executor whose args are shell commands whatever
// the capability (the seed runs its shell check for executor shell_exec or
// capability code:exec).
const ExecutorShellExec = "shell_exec"

// isShellRequest reports whether the shell rules of the guard apply to r.
func isShellRequest(r Request) bool {
	return r.Capability == CapabilityCodeExec || strings.EqualFold(strings.TrimSpace(r.Executor), ExecutorShellExec)
}

// Guard is the binary half of vaglio: it refuses a request that names a
// forbidden path in its target or in any string of its args (keys too,
// however deeply nested), or, for code:exec or the shell_exec executor, a
// destructive shell command in any of them; a list in args (such as
// "command": ["rm", "-rf", "/"]) is also read as one command, its items
// joined with spaces. home is what "~" and $HOME stand for ("" leaves them
// as they are; the path rules still catch ~/.ssh through the .ssh
// component).
//
// The check is lexical, on purpose: it runs before anything touches the
// disk, so it cleans paths (.., //, ~, $HOME, shell quotes, {a,b} braces,
// globs such as /etc/pass*) but cannot see symlinks. Matching is
// case-insensitive because macOS file systems are. A relative path that
// climbs with leading ".." is checked as if it reached the root, since the
// working directory is unknown. Behind these structured rules the seed's
// own regexes run on every raw string (seedrules.go), so nothing the seed
// blocks passes here; the one exception is dd of=/dev/null.
//
// reason names the rule that matched and where (target, args.a.b[2]),
// never the matched string, so it is safe to log and to show on a card.
func Guard(r Request, home string) (blocked bool, reason string) {
	return guard(r, home, nil)
}

// guard is Guard with the gateway's own files and addresses (nil: none).
func guard(r Request, home string, own *ownRules) (blocked bool, reason string) {
	if home != "" {
		home = path.Clean(home)
	}
	if own != nil {
		if reason, hit := own.reachesGateway(r); hit {
			return true, reason
		}
	}
	var extra []pathRule
	if own != nil {
		extra = own.paths
	}
	shell := isShellRequest(r)
	check := func(s, where string) (string, bool) {
		// Shell rules first: for rm -rf /* they name the command, which
		// says more than the path rule /root that the glob also matches.
		if shell {
			if rule, hit := dangerousCommandIn(s, home); hit {
				return fmt.Sprintf("guard: dangerous shell command %q in %s", rule, where), true
			}
			if rule, hit := seedShellIn(s); hit {
				return fmt.Sprintf("guard: dangerous shell command %q in %s", rule, where), true
			}
		}
		if rule, hit := forbiddenPathIn(s, home, extra); hit {
			return fmt.Sprintf("guard: forbidden path %s in %s", rule, where), true
		}
		if shell {
			// bash's own reading: every word, redirection target and
			// here-document, also inside substitutions and bash -c.
			if rule, hit := forbiddenPathInWords(s, home, extra); hit {
				return fmt.Sprintf("guard: forbidden path %s in %s", rule, where), true
			}
		}
		if rule, hit := seedPathIn(s, home); hit {
			return fmt.Sprintf("guard: forbidden path %s in %s", rule, where), true
		}
		return "", false
	}
	if reason, hit := check(r.Target, "target"); hit {
		return true, reason
	}
	w := argWalker{joinLists: shell}
	w.fn = func(e argEvent) bool {
		where := e.loc
		switch {
		case e.isKey:
			where = "a key of " + strings.TrimSuffix(e.loc, "."+e.s)
		case e.isList:
			where = e.loc + " (items joined)"
		}
		reason, blocked = check(e.s, where)
		return !blocked
	}
	if w.run(r.Args); blocked {
		return true, reason
	}
	if w.tooDeep {
		return true, fmt.Sprintf("guard: args nested deeper than %d levels, not all inspected", maxArgDepth)
	}
	return false, ""
}

// forbiddenPathIn looks for a forbidden path anywhere in s: s itself as one
// path, and every word of it as a shell would split it, so the path inside
// `cat ~/.ssh/id_rsa` or `--key=/etc/shadow` is found.
func forbiddenPathIn(s, home string, extra []pathRule) (rule string, hit bool) {
	if s == "" {
		return "", false
	}
	s = shellNormalize(s, home)
	if rule, hit := forbiddenPath(expandTilde(strings.TrimSpace(s), home), extra); hit {
		return rule, true
	}
	for _, word := range strings.Fields(s) {
		for _, w := range expandBraces(word) {
			for _, tok := range strings.FieldsFunc(w, isPathSep) {
				if rule, hit := forbiddenPath(expandTilde(tok, home), extra); hit {
					return rule, true
				}
			}
		}
	}
	return "", false
}

// isPathSep splits a shell word into the parts that may be paths: after
// redirections, pipes, $( ), `--opt=`, `host:` or a file:// scheme.
func isPathSep(r rune) bool {
	return unicode.IsSpace(r) || strings.ContainsRune(";|&<>()`,=:{}", r)
}

// forbiddenPath checks one path, after cleaning it, against the closed
// list and the extra rules (the gateway's own files).
func forbiddenPath(p string, extra []pathRule) (rule string, hit bool) {
	if p == "" {
		return "", false
	}
	comps, rooted := pathComps(p)
	if rule, hit := matchPathRules(forbiddenPaths, comps, rooted); hit {
		return rule, true
	}
	return matchPathRules(extra, comps, rooted)
}

// pathComps cleans p and splits it into lower-case components. A relative
// path that climbs with leading ".." is taken as reaching the root, since
// the working directory is unknown.
func pathComps(p string) (comps []string, rooted bool) {
	rooted = strings.HasPrefix(p, "/")
	comps = strings.Split(strings.TrimPrefix(path.Clean(strings.ToLower(p)), "/"), "/")
	if !rooted {
		n := 0
		for n < len(comps) && comps[n] == ".." {
			n++
		}
		if n > 0 {
			comps, rooted = comps[n:], true
		}
	}
	return comps, rooted
}

// matchPathRules finds the first rule that matches the path's components.
func matchPathRules(rules []pathRule, comps []string, rooted bool) (rule string, hit bool) {
	for _, r := range rules {
		if r.anchored {
			if rooted && (r.matchAt(comps) ||
				// macOS: /etc is a symlink to /private/etc.
				(len(comps) > 1 && comps[0] == "private" && comps[1] == "etc" && r.matchAt(comps[1:]))) {
				return r.name, true
			}
			continue
		}
		for i := range comps {
			if r.whole && len(comps)-i != len(r.comps) {
				continue
			}
			if hasPrefix(comps[i:], r.comps) {
				return r.name, true
			}
		}
	}
	return "", false
}

// matchAt reports whether comps starts with the rule's components (and, for
// a whole rule, ends there).
func (r pathRule) matchAt(comps []string) bool {
	if r.whole && len(comps) != len(r.comps) {
		return false
	}
	return hasPrefix(comps, r.comps)
}

func hasPrefix(comps []string, rule []component) bool {
	if len(comps) < len(rule) {
		return false
	}
	for i, c := range rule {
		if !c.match(comps[i]) {
			return false
		}
	}
	return true
}

// match reports whether the path element in (lower case) names this
// component. A glob in the input (/etc/pass*, /dev/sd?) matches when the
// shell would expand it to the forbidden name; like the shell, a glob that
// does not start with a dot does not match a dot file.
func (c component) match(in string) bool {
	if strings.ContainsAny(in, "*?[") {
		if strings.HasPrefix(c.example, ".") && !strings.HasPrefix(in, ".") {
			return false
		}
		if ok, err := path.Match(in, c.example); err == nil {
			return ok || c.globReachesNonSafe(in)
		}
		// A malformed pattern is taken literally by the shell: fall through.
	}
	ok, _ := path.Match(c.pat, in)
	return ok && !slices.Contains(c.except, in)
}

// unquote drops shell quoting characters (a Replacer is safe for concurrent use).
var unquote = strings.NewReplacer(`"`, "", `'`, "", `\`, "")

// shellNormalize undoes what a shell would undo before a command sees its
// arguments, so /etc/pa"ss"wd and /etc/pass\wd read as /etc/passwd, and
// expands $HOME and ${HOME}. Without a home they become "~", which the
// rules still treat as the home directory.
func shellNormalize(s, home string) string {
	s = unquote.Replace(s)
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

// expandTilde expands a leading "~" or "~/" the way the shell does.
func expandTilde(p, home string) string {
	if home != "" && (p == "~" || strings.HasPrefix(p, "~/")) {
		return home + p[1:]
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

// expandBraces does the shell's {a,b} expansion on one word, within the
// limits above; when they are reached the rest is returned unexpanded and
// the braces and commas then split it into parts that are still checked.
func expandBraces(word string) []string {
	if len(word) > maxBraceWordBytes || !strings.Contains(word, "{") || !strings.Contains(word, ",") {
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
	for _, seg := range strings.FieldsFunc(s, isCommandSep) {
		var words []string
		for _, w := range strings.Fields(seg) {
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

// globReachesNonSafe reports, for a component with exceptions (/dev/*),
// whether a glob in the input matches some name outside them: /dev/m*
// reaches /dev/mem though not the example vda. A glob that matches only
// safe names (/dev/std*) does not.
func (c component) globReachesNonSafe(in string) bool {
	if c.except == nil {
		return false
	}
	for _, name := range []string{"sda", "vda", "xvda", "nvme0n1", "mem", "kmem", "port", "mapper", "disk", "dm-0",
		"mmcblk0", "loop0", "md0", "hda", "sr0", "tty1", "ttys0", "console", "kmsg", "tcp", "udp", "input", "cpu", "bus",
		"hidraw0", "watchdog", "fuse", "kvm", "net", "snd", "dri", "usb", "sg0", "nbd0", "zram0", "ram0", "rtc0"} {
		if ok, _ := path.Match(in, name); ok {
			return true
		}
	}
	return false
}

// forbiddenPathInWords checks every word bash would hand to a command of
// the command line s (shell.Words: arguments, redirection targets,
// here-documents, the words of substitutions and of scripts run through
// bash -c or eval) as a path. A word known only when the command runs is
// a pattern (*/.ssh for $DIR/.ssh) and matches when it can reach a
// forbidden path. A line bash would not parse adds nothing here: the
// lexical checks above still read it whole.
func forbiddenPathInWords(s, home string, extra []pathRule) (rule string, hit bool) {
	if !strings.ContainsAny(s, "/~$`") {
		return "", false
	}
	words, _ := shell.Words(s)
	for _, w := range words {
		t := w.Text
		if w.Tilde {
			t = expandTilde(t, home)
		}
		if rule, hit := forbiddenPath(t, extra); hit {
			return rule, true
		}
		if w.Kind == shell.Heredoc || strings.ContainsAny(t, " \t\n") {
			if rule, hit := forbiddenPathIn(t, home, extra); hit {
				return rule, true
			}
		}
	}
	return "", false
}
