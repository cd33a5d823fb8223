//go:build recordstest_unscoped

package main

// recordsd must never be built with the recordstest_unscoped tag: in that build the SQL of engine/sqlgen
// lacks its workspace predicate (engine/sqlgen/scope.go), leaving row-level security alone between
// workspaces, and SQLite with no guard at all. This declaration makes such a build fail to compile.
var _ int = "recordsd cannot be built with -tags recordstest_unscoped"
