// The Landlock ruleset of a child: its grants at one ABI level.

package sandbox

import (
	"fmt"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// abiConfigs are the access rights each Landlock ABI level handles.
var abiConfigs = []landlock.Config{{}, landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6, landlock.V7}

// MaxABI is the newest Landlock ABI the sandbox uses.
const MaxABI = 7

// KernelABI is the Landlock ABI of the running kernel: 0 when it has none
// or it is disabled (not in the lsm= boot list).
func KernelABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// EffectiveABI is the ABI a child gets: the kernel's, capped at MaxABI and
// at limit when limit is above 0.
func EffectiveABI(limit int) int {
	abi := min(KernelABI(), MaxABI)
	if limit > 0 && limit < abi {
		abi = limit
	}
	return abi
}

// Holds says, for an ABI level, which of the sandbox's promises the
// kernel keeps there (the start line).
func Holds(abi int) string {
	switch {
	case abi <= 0:
		return "nothing"
	case abi == 1:
		return "reads and writes; files cannot move between directories (no refer right); truncation unchecked"
	case abi == 2:
		return "reads and writes; truncation unchecked"
	case abi == 3:
		return "reads, writes and truncation"
	case abi == 4:
		return "reads, writes, truncation and TCP ports"
	case abi == 5:
		return "reads, writes, truncation, TCP ports and device ioctls"
	}
	return "reads, writes, truncation, TCP ports, device ioctls, signals and abstract sockets"
}

// rulesetFD builds the ruleset of rules at the ABI level abi; with ports
// not nil, TCP connections are restricted to those ports (the fallback
// when there is no network namespace).
func rulesetFD(abi int, r Rules, ports []uint16) (fd int, flags uint32, err error) {
	if abi < 1 || abi >= len(abiConfigs) {
		return -1, 0, fmt.Errorf("landlock ABI %d is not supported", abi)
	}
	cfg := abiConfigs[abi]
	if ports == nil {
		cfg.HandledAccessNet = 0
	}
	var rules []landlock.Rule
	for _, g := range r.Grants {
		var rule landlock.FSRule
		switch {
		case g.Write && g.Dir:
			rule = landlock.RWDirs(g.Path)
			if abi >= 2 {
				rule = rule.WithRefer()
			}
		case g.Write:
			rule = landlock.RWFiles(g.Path)
		case g.Dir:
			rule = landlock.RODirs(g.Path)
		default:
			rule = landlock.ROFiles(g.Path)
		}
		if g.Device && abi >= 5 {
			rule = rule.WithIoctlDev()
		}
		rules = append(rules, rule.IgnoreIfMissing())
	}
	for _, p := range ports {
		rules = append(rules, landlock.ConnectTCP(p))
	}
	fd, flags, err = cfg.NewRulesetFD(rules...)
	if err == nil && fd < 0 {
		err = fmt.Errorf("landlock ABI %d: nothing to enforce", abi)
	}
	return fd, flags, err
}
