//go:build unix

package agent

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup makes the program the leader of a new process group, so
// that signalGroup reaches everything it starts.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig to the process group p leads. It returns ESRCH
// when the group has no process left.
func signalGroup(p *os.Process, sig syscall.Signal) error {
	return syscall.Kill(-p.Pid, sig)
}
