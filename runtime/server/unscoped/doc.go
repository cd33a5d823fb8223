// Package unscoped holds the tests of the build without the engine's workspace predicate: its test
// files compile only with -tags recordstest_unscoped (engine/sqlgen/scope.go), where row-level
// security alone keeps workspaces apart. The suites they run are shared with runtime/server's tests
// through servertest/tenancy, so that the tagged build compiles these tests alone. Without the tag
// the package has no tests. It has no code.
package unscoped
