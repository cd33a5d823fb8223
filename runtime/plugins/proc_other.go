//go:build !linux

package plugins

import "syscall"

// childAttrs has nothing to add outside Linux; Close stops the plugins.
func childAttrs() *syscall.SysProcAttr { return nil }
