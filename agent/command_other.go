//go:build !unix

package agent

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup does nothing here: without process groups only the
// program itself can be stopped.
func setProcessGroup(cmd *exec.Cmd) {}

// signalGroup kills the program (there is no SIGTERM to send). It returns
// ESRCH when the program has already exited.
func signalGroup(p *os.Process, sig syscall.Signal) error {
	if err := p.Kill(); errors.Is(err, os.ErrProcessDone) {
		return syscall.ESRCH
	} else if err != nil {
		return err
	}
	return nil
}
