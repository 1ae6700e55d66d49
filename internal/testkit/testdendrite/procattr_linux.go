package testdendrite

import "syscall"

// dieWithParent has the kernel kill dendrite when the test binary dies
// (a -timeout panic, a kill -9) before its cleanup could. Pdeathsig
// follows the OS thread that started the child; Go keeps such threads
// for the life of the process unless a goroutine locked to one exits.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
