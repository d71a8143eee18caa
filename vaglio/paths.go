// The guard's forbidden paths: the list, and how a path, a string or a shell
// word is read against it (cleaned, components matched, globs that could reach one).

package vaglio

import (
	"path"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/metnos/gateway/internal/shell"
)

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

func lit(s string) component { return component{pat: s, example: s} }

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
	// The shipped systemd unit's (deploy/gateway.service): its config
	// directory holds the env file of secrets, and under DynamicUser the
	// state and log directories really live below /var/{lib,log}/private
	// (/var/lib/metnos is a link there), whatever the config says.
	{name: "of the gateway's own (/etc/metnos)", anchored: true, comps: []component{lit("etc"), lit("metnos")}},
	{name: "of the gateway's own (/var/lib/private/metnos)", anchored: true, comps: []component{lit("var"), lit("lib"), lit("private"), lit("metnos")}},
	{name: "of the gateway's own (/var/lib/metnos)", anchored: true, comps: []component{lit("var"), lit("lib"), lit("metnos")}},
	{name: "of the gateway's own (/var/log/private/metnos)", anchored: true, comps: []component{lit("var"), lit("log"), lit("private"), lit("metnos")}},
	{name: "of the gateway's own (/var/log/metnos)", anchored: true, comps: []component{lit("var"), lit("log"), lit("metnos")}},
	{name: ".ssh", comps: []component{lit(".ssh")}},
	{name: ".aws/credentials", comps: []component{glob("*.aws", ".aws"), glob("credentials*", "credentials")}},
	{name: ".config/*/credentials.env", comps: []component{glob("*.config", ".config"), glob("*", "metnos"), glob("credentials.env*", "credentials.env")}},
	{name: ".gnupg", comps: []component{glob("*.gnupg", ".gnupg")}},
}

// forbiddenPathIn looks for a forbidden path anywhere in s: s itself as one
// path, and every word of it as a shell would split it, so the path inside
// `cat ~/.ssh/id_rsa` or `--key=/etc/shadow` is found.
func forbiddenPathIn(s, home string, m *pathMatcher) (rule string, hit bool) {
	if s == "" {
		return "", false
	}
	if plainWord(s) {
		// One element, as it is: nothing to unquote, expand, clean or
		// split (an arg key, "utf-8"). TestForbiddenPathIn_PlainWords
		// holds it to forbiddenPathInText.
		if m = m.orForbidden(); m.wordSafe {
			return "", false
		}
		var buf [1]string
		return m.match(append(buf[:0], s), false, true)
	}
	return forbiddenPathInText(s, home, m)
}

// forbiddenPathInText is forbiddenPathIn for any string.
func forbiddenPathInText(s, home string, m *pathMatcher) (rule string, hit bool) {
	s = shellNormalize(s, home)
	whole := expandTilde(strings.TrimSpace(s), home)
	if rule, hit := forbiddenPath(whole, m); hit {
		return rule, true
	}
	if !hasPathSep(s) {
		return "", false // one word of one part: the whole string, checked
	}
	// Every part of every word; a part that is the whole string again
	// (a lone path) has its answer already.
	parts := func(w string) (string, bool) {
		for tok := range strings.FieldsFuncSeq(w, isPathSep) {
			if p := expandTilde(tok, home); p != whole {
				if rule, hit := forbiddenPath(p, m); hit {
					return rule, true
				}
			}
		}
		return "", false
	}
	for word := range strings.FieldsSeq(s) {
		if !hasBraces(word) {
			if rule, hit := parts(word); hit {
				return rule, true
			}
			continue
		}
		for _, w := range expandBraces(word) {
			if rule, hit := parts(w); hit {
				return rule, true
			}
		}
	}
	return "", false
}

// isPathSep splits a shell word into the parts that may be paths: after
// redirections, pipes, $( ), `--opt=`, `host:` or a file:// scheme.
func isPathSep(r rune) bool {
	if r < utf8.RuneSelf {
		return pathSepASCII[r]
	}
	return unicode.IsSpace(r)
}

// hasPathSep reports whether s holds a rune isPathSep splits at.
func hasPathSep(s string) bool {
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if pathSepASCII[c] {
				return true
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			return true
		}
		i += n
	}
	return false
}

// pathSepASCII is isPathSep for ASCII, as a table.
var pathSepASCII = func() (t [utf8.RuneSelf]bool) {
	for r := range rune(utf8.RuneSelf) {
		t[r] = unicode.IsSpace(r) || strings.ContainsRune(";|&<>()`,=:{}", r)
	}
	return t
}()

// forbiddenPath checks one path, after cleaning it, against m: the closed
// list and the gateway's own files (nil: the closed list alone).
func forbiddenPath(p string, m *pathMatcher) (rule string, hit bool) {
	if p == "" {
		return "", false
	}
	var buf [16]string
	comps, rooted := splitComps(buf[:0], p)
	return m.orForbidden().match(comps, rooted, !hasAnyByte(p, globInputSet))
}

// orForbidden is m, or the closed list alone for nil.
func (m *pathMatcher) orForbidden() *pathMatcher {
	if m == nil {
		return forbiddenMatcher
	}
	return m
}

// plainWord reports a string of lower-case ASCII letters, digits, '_' and
// '-' alone: one path element that no shell reading, tilde, cleaning or
// lower-casing changes.
func plainWord(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return s != ""
}

// forbiddenMatcher is forbiddenPaths compiled.
var forbiddenMatcher = compilePaths(forbiddenPaths)

// pathComps cleans p and splits it into lower-case components (see
// splitComps).
func pathComps(p string) (comps []string, rooted bool) { return splitComps(make([]string, 0, 8), p) }

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
func forbiddenPathInWords(s, home string, m *pathMatcher) (rule string, hit bool) {
	if !strings.ContainsAny(s, "/~$`") {
		return "", false
	}
	words, _ := shell.Words(s)
	for _, w := range words {
		t := w.Text
		if w.Tilde {
			t = expandTilde(t, home)
		}
		if rule, hit := forbiddenPath(t, m); hit {
			return rule, true
		}
		if w.Kind == shell.Heredoc || strings.ContainsAny(t, " \t\n") {
			if rule, hit := forbiddenPathIn(t, home, m); hit {
				return rule, true
			}
		}
	}
	return "", false
}
