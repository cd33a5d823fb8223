//go:build race

package server_test

// raceBuild reports whether the race detector is on: it slows everything down several times.
const raceBuild = true
