package plugins

import (
	"errors"
	"syscall"
)

// childAttrs makes the kernel kill a plugin when recordsd dies, even by SIGKILL: no orphans.
func childAttrs() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }

// processAlive reports whether process pid may exist (it does, or it is not ours to ask about).
func processAlive(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
