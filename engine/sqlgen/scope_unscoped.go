//go:build recordstest_unscoped

package sqlgen

// workspacePredicate is false in test binaries built with -tags recordstest_unscoped only: statements
// carry no workspace_id predicate, and row-level security is the only guard left (see scope and
// runtime/server/unscoped). recordsd and recordsctl do not compile with this tag.
const workspacePredicate = false
