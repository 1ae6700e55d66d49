//go:build !linux

package testdendrite

import "syscall"

// dieWithParent has no counterpart here: a test binary that dies before
// its cleanup leaves dendrite running.
func dieWithParent() *syscall.SysProcAttr { return nil }
