//go:build !linux

package plugins

import (
	"os"
	"syscall"
)

// childAttrs has nothing to add outside Linux; Close stops the plugins.
func childAttrs() *syscall.SysProcAttr { return nil }

// startPinned runs start: without a parent-death signal, the thread that starts a plugin does not matter.
func startPinned(start func(), _ <-chan struct{}) { start() }

// processAlive reports whether process pid may exist: always, here, so that nothing is removed.
func processAlive(int) bool { return true }

// programID has no status-change time to go by here: every start hashes the program.
func programID(os.FileInfo) (fileID, bool) { return fileID{}, false }
