package plugins

import (
	"errors"
	"os"
	"runtime"
	"syscall"
)

// childAttrs makes the kernel kill a plugin when recordsd dies, even by SIGKILL: no orphans. Linux sends
// this parent-death signal when the thread that forked the plugin ends, not only when the process does
// (prctl(2), PR_SET_PDEATHSIG; golang/go#27505): startPinned keeps that thread for the plugin.
func childAttrs() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }

// startPinned runs start, which starts a plugin's process, on an OS thread that is kept for it until
// release is closed (the process is being killed); it returns once start has.
//
// Go ends an OS thread when a goroutine locked to it (runtime.LockOSThread) returns without unlocking,
// and any goroutine of any library may do so on whichever thread the scheduler gives it. Had the
// thread that forked a plugin run such a goroutine, the kernel would have sent the plugin its
// parent-death signal while recordsd lived on. Locked to this goroutine, which waits idle once start
// returns, the thread runs nothing else while the plugin lives, and ends only with recordsd. One idle
// thread per plugin process is the cost.
func startPinned(start func(), release <-chan struct{}) {
	started := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		start()
		close(started)
		<-release
	}()
	<-started
}

// processAlive reports whether process pid may exist (it does, or it is not ours to ask about).
func processAlive(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// programID is the identity of the file info describes (see fileID); false when the system does not
// say its inode and status-change time.
func programID(info os.FileInfo) (fileID, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: int64(st.Dev), ino: int64(st.Ino), size: st.Size, mtime: info.ModTime().UnixNano(), ctime: st.Ctim.Nano()}, true
}
