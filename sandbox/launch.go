// The parent's side of a child: the re-executed gateway binary started in
// its own user and network namespaces, the loopback listeners it made
// there received back, its exit waited for.

package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// Config is one child to start.
type Config struct {
	Argv []string // the program and its arguments
	Env  []string // its environment (the proxy and API variables are added)
	Dir  string   // its working directory
	// Rules are its paths (Build).
	Rules Rules
	// ABI caps the Landlock ABI used (0: the kernel's, up to MaxABI).
	ABI int
	// NoNamespace skips the network namespace even where the kernel has
	// one: TCP connections are then held by Landlock's port rules alone.
	NoNamespace bool
	// Network gives the child the egress proxy; without it the child
	// reaches nothing but the gateway's API.
	Network bool
	// ProxyVars and APIVars are the environment variables set to the
	// proxy's and the API's URL as the child reaches them.
	ProxyVars, APIVars []string
	Stdin              io.Reader
	Stdout, Stderr     io.Writer
	// Started, when set, is called once the child exists and before the
	// program runs, with the ABI and whether it has its own namespaces:
	// what it prints comes before anything the program prints.
	Started func(abi int, namespace bool)
}

// Child is a started child. The caller serves Proxy (when Network) and
// API: they accept the child's connections, and only the child's.
type Child struct {
	Proxy, API net.Listener
	// ABI is the Landlock ABI in force; Namespace whether the child has its
	// own network namespace (else TCP is held by port rules).
	ABI       int
	Namespace bool
	cmd       *exec.Cmd
}

// ErrNoLandlock is Start's error on a kernel without Landlock.
var ErrNoLandlock = errors.New("the kernel has no Landlock")

// Start starts the child: the running binary again, as the init that
// enters the sandbox and executes c.Argv (Main, in the binary's main).
func Start(c Config) (*Child, error) {
	if len(c.Argv) == 0 {
		return nil, errors.New("no program to run")
	}
	abi := EffectiveABI(c.ABI)
	if abi < 1 {
		return nil, ErrNoLandlock
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("the gateway binary: %w", err)
	}
	ch, err := startNamespaced(c, abi, self)
	if err == nil || !errors.Is(err, errNoNamespace) {
		return ch, err
	}
	if abi < 4 {
		return nil, fmt.Errorf("no network namespace (%v) and Landlock ABI %d has no TCP rules: the network cannot be held", err, abi)
	}
	return startPorts(c, abi, self)
}

// errNoNamespace is a kernel (or a setting) that refuses unprivileged
// user and network namespaces.
var errNoNamespace = errors.New("no unprivileged user and network namespaces")

func startNamespaced(c Config, abi int, self string) (*Child, error) {
	if c.NoNamespace {
		return nil, errNoNamespace
	}
	fd, flags, err := rulesetFD(abi, c.Rules, nil)
	if err != nil {
		return nil, err
	}
	ruleset := os.NewFile(uintptr(fd), "landlock-ruleset")
	defer ruleset.Close()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	mine, theirs := os.NewFile(uintptr(pair[0]), "ctl"), os.NewFile(uintptr(pair[1]), "ctl-child")
	defer mine.Close()
	listen := []string{"api"}
	if c.Network {
		listen = append(listen, "proxy")
	}
	spec := initSpec{Argv: c.Argv, Env: c.Env, Dir: c.Dir, Namespace: true, RulesetFlags: flags,
		ProxyVars: c.ProxyVars, APIVars: c.APIVars, Listen: listen}
	uid, gid := os.Getuid(), os.Getgid()
	attr := &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		AmbientCaps: []uintptr{unix.CAP_NET_ADMIN}, // to bring up lo; dropped before the program runs
	}
	cmd, err := startInit(c, self, spec, attr, ruleset, theirs, abi)
	theirs.Close()
	if err != nil {
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EACCES) {
			return nil, fmt.Errorf("%w: %v", errNoNamespace, err)
		}
		return nil, err
	}
	lns, err := receiveListeners(mine, listen)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("the sandbox's init: %w", err)
	}
	ch := &Child{API: lns["api"], Proxy: lns["proxy"], ABI: abi, Namespace: true, cmd: cmd}
	return ch, nil
}

// startPorts is the fallback without namespaces: the listeners are the
// parent's own on 127.0.0.1, and Landlock allows TCP to their ports only.
func startPorts(c Config, abi int, self string) (*Child, error) {
	var lc net.ListenConfig
	lc.SetMultipathTCP(false) // Landlock's port rules do not see MPTCP
	api, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ch := &Child{API: api, ABI: abi}
	ports := []uint16{uint16(api.Addr().(*net.TCPAddr).Port)}
	spec := initSpec{Argv: c.Argv, Env: c.Env, Dir: c.Dir, ProxyVars: c.ProxyVars, APIVars: c.APIVars, APIAddr: api.Addr().String()}
	if c.Network {
		if ch.Proxy, err = lc.Listen(context.Background(), "tcp", "127.0.0.1:0"); err != nil {
			api.Close()
			return nil, err
		}
		ports = append(ports, uint16(ch.Proxy.Addr().(*net.TCPAddr).Port))
		spec.ProxyAddr = ch.Proxy.Addr().String()
	}
	fd, flags, err := rulesetFD(abi, c.Rules, ports)
	if err != nil {
		ch.closeListeners()
		return nil, err
	}
	ruleset := os.NewFile(uintptr(fd), "landlock-ruleset")
	defer ruleset.Close()
	spec.RulesetFlags = flags
	if ch.cmd, err = startInit(c, self, spec, nil, ruleset, nil, abi); err != nil {
		ch.closeListeners()
		return nil, err
	}
	return ch, nil
}

// startInit starts the init with the spec on fd 3, the ruleset on fd 4
// and the control socket (or nothing) on fd 5.
func startInit(c Config, self string, spec initSpec, attr *syscall.SysProcAttr, ruleset, ctl *os.File, abi int) (*exec.Cmd, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd := exec.Command(self)
	// argv[0] "gateway": a test binary that stands in for the gateway
	// (testscript's Main) runs the gateway's main for it, which starts Main.
	cmd.Args = []string{"gateway"}
	cmd.Env = []string{initEnv + "=1", "PATH=" + envValue(c.Env, "PATH")}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Stdin, c.Stdout, c.Stderr
	cmd.ExtraFiles = []*os.File{r, ruleset, ctl}
	if ctl == nil {
		cmd.ExtraFiles = cmd.ExtraFiles[:2]
	}
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, err
	}
	if c.Started != nil {
		c.Started(abi, spec.Namespace) // the init waits for its spec
	}
	_, err = w.Write(b) // within the pipe's buffer for any sane spec; the init reads it first
	w.Close()
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	return cmd, nil
}

// receiveListeners reads the init's one message: the listeners' fds, in
// the order of names.
func receiveListeners(ctl *os.File, names []string) (map[string]net.Listener, error) {
	buf := make([]byte, 64)
	oob := make([]byte, unix.CmsgSpace(4*len(names)))
	n, oobn, _, _, err := unix.Recvmsg(int(ctl.Fd()), buf, oob, 0)
	if err != nil {
		return nil, err
	}
	if n == 0 && oobn == 0 {
		return nil, errors.New("it ended before its listeners were made")
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("no listeners in its message (%v)", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil {
		return nil, err
	}
	out := map[string]net.Listener{}
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "listener")
		if i >= len(names) {
			f.Close()
			continue
		}
		ln, err := net.FileListener(f)
		f.Close()
		if err != nil {
			return nil, err
		}
		out[names[i]] = ln
	}
	if len(out) != len(names) {
		return nil, fmt.Errorf("%d listeners received, %d wanted", len(out), len(names))
	}
	return out, nil
}

func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if len(kv) > len(name) && kv[:len(name)+1] == name+"=" {
			v = kv[len(name)+1:]
		}
	}
	return v
}

// Signal sends sig to the child.
func (c *Child) Signal(sig os.Signal) error { return c.cmd.Process.Signal(sig) }

// Pid is the child's process id (as the parent sees it).
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Wait waits for the child and returns its exit status (128+n when a
// signal n ended it). The listeners are closed.
func (c *Child) Wait() int {
	err := c.cmd.Wait()
	c.closeListeners()
	var xe *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &xe):
		if ws, ok := xe.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return xe.ExitCode()
	}
	return 1
}

func (c *Child) closeListeners() {
	if c.API != nil {
		c.API.Close()
	}
	if c.Proxy != nil {
		c.Proxy.Close()
	}
}
