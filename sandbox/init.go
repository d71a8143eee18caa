// The child's side: the gateway binary re-executed as the sandbox's init.
// Inside the new namespaces it brings up loopback, makes the listeners the
// parent serves, enters the Landlock domain and executes the program in
// its own place, so the program is the process the parent waits for.

package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// initEnv marks the re-executed binary as the sandbox's init.
const initEnv = "GATEWAY_SANDBOX_INIT"

// initSpec is what the parent tells the init, as JSON on fd 3.
type initSpec struct {
	Argv         []string `json:"argv"`
	Env          []string `json:"env"`
	Dir          string   `json:"dir"`
	Namespace    bool     `json:"namespace"`
	RulesetFlags uint32   `json:"ruleset_flags"`
	ProxyVars    []string `json:"proxy_vars"`
	APIVars      []string `json:"api_vars"`
	// ProxyAddr and APIAddr are the parent's listeners (no namespace).
	ProxyAddr string `json:"proxy_addr"`
	APIAddr   string `json:"api_addr"`
	// Listen names the listeners to make on the namespace's loopback.
	Listen []string `json:"listen"`
}

// Main runs the sandbox's init when this process is one, and never
// returns then; otherwise it returns at once. Call it first in main (and
// in TestMain of tests that start children with the test binary).
func Main() {
	if os.Getenv(initEnv) != "1" {
		return
	}
	runtime.LockOSThread() // the domain and the capabilities are this thread's; it executes the program
	err := initChild()
	fmt.Fprintf(os.Stderr, "gateway run: %v\n", err)
	os.Exit(127)
}

// initChild returns only on failure.
func initChild() error {
	specFile := os.NewFile(3, "spec")
	var s initSpec
	err := json.NewDecoder(specFile).Decode(&s)
	specFile.Close()
	if err != nil {
		return fmt.Errorf("reading the sandbox spec: %w", err)
	}
	if len(s.Argv) == 0 {
		return fmt.Errorf("no program")
	}
	if s.Namespace {
		addrs, err := makeListeners(s.Listen)
		if err != nil {
			return err
		}
		s.APIAddr, s.ProxyAddr = addrs["api"], addrs["proxy"]
	}
	env := s.Env
	if s.ProxyAddr != "" && len(s.ProxyVars) > 0 {
		for _, v := range s.ProxyVars {
			env = append(env, v+"=http://"+s.ProxyAddr)
		}
		// The gateway's API and the program's own servers are on loopback.
		env = append(env, "NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1")
	}
	for _, v := range s.APIVars {
		env = append(env, v+"=http://"+s.APIAddr)
	}
	prog, err := exec.LookPath(s.Argv[0])
	if err != nil {
		return err
	}
	if s.Dir != "" {
		if err := os.Chdir(s.Dir); err != nil {
			return err
		}
	}
	unix.CloseOnExec(4)
	// The program keeps no capability, in the namespace or anywhere.
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("dropping capabilities: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := ll.LandlockRestrictSelf(4, s.RulesetFlags); err != nil {
		return fmt.Errorf("entering the Landlock domain: %w", err)
	}
	return syscall.Exec(prog, s.Argv, env)
}

// makeListeners brings up the namespace's loopback, listens on
// 127.0.0.1 once per name, and sends the listeners to the parent over the
// control socket on fd 5. It returns each one's address.
func makeListeners(names []string) (map[string]string, error) {
	if err := loopbackUp(); err != nil {
		return nil, fmt.Errorf("bringing up loopback: %w", err)
	}
	addrs := map[string]string{}
	var fds []int
	for _, n := range names {
		fd, addr, err := listenLoopback()
		if err != nil {
			return nil, err
		}
		fds = append(fds, fd)
		addrs[n] = addr
	}
	if err := unix.Sendmsg(5, []byte("listeners"), unix.UnixRights(fds...), nil, 0); err != nil {
		return nil, fmt.Errorf("sending the listeners: %w", err)
	}
	for _, fd := range fds {
		unix.Close(fd)
	}
	unix.Close(5)
	return addrs, nil
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP | unix.IFF_RUNNING)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

func listenLoopback() (int, string, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, "", err
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		unix.Close(fd)
		return -1, "", err
	}
	if err := unix.Listen(fd, 128); err != nil {
		unix.Close(fd)
		return -1, "", err
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return -1, "", err
	}
	return fd, fmt.Sprintf("127.0.0.1:%d", sa.(*unix.SockaddrInet4).Port), nil
}
