//go:build race

package servertest

// Race reports whether the race detector is on: it slows everything down several times.
const Race = true
