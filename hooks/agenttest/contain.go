package agenttest

import (
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// Contain runs cmd (not started yet) in a process group of its own, and
// makes a cancelled context kill the whole group: an agent CLI is often a
// Node wrapper around a native binary, or starts helpers, and killing only
// the process the test started leaves them writing into the test's
// temporary directories after the test ended ("TempDir RemoveAll cleanup:
// directory not empty"). Call the returned reap after cmd.Wait: it kills
// what is left of the group and waits until none of it runs.
func Contain(cmd *exec.Cmd) (reap func()) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return func() {
		if cmd.Process == nil {
			return
		}
		pgid := cmd.Process.Pid
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if err := syscall.Kill(-pgid, syscall.SIGKILL); errors.Is(err, syscall.ESRCH) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
