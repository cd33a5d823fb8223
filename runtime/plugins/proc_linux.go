package plugins

import "syscall"

// childAttrs makes the kernel kill a plugin when recordsd dies, even by SIGKILL: no orphans.
func childAttrs() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
