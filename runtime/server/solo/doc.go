// Package solo holds the behaviour tests of runtime/server (servertest: real servers on both backends)
// that must not share their process with other tests: TestPluginChaos samples the memory, goroutines
// and child processes of the test process, and TestDatabaseFaults and TestQuotaRedisOutage bound
// answer latencies that the load of runtime/server's parallel tests, in the same process, would bend
// (measured: 370 ms against TestQuotaRedisOutage's 200 ms at -parallel 6). Their top-level tests call
// no t.Parallel, so they run one after another; as a package of its own, `go test -p N ./...` runs
// them beside runtime/server instead of before its parallel tests. The package has no code: only
// tests.
package solo
