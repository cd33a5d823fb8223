package sqlgen

// scope renders the workspace predicate "col = workspace" of a statement, adding workspace as an
// argument. Every workspace predicate the builder writes goes through here, so that one switch can
// take them all out: workspacePredicate is a constant, true in every build except test binaries built
// with -tags recordstest_unscoped (scope_unscoped.go), where scope renders TRUE and binds nothing. Those
// tests show that PostgreSQL's row-level security alone still keeps workspaces apart. No flag, setting
// or environment variable can turn the predicate off in a normal build, and recordsd and recordsctl
// refuse to compile with the tag (cmd/*/unscoped_guard.go).
func (a *args) scope(col, workspace string) string {
	if !workspacePredicate {
		return "TRUE"
	}
	return col + " = " + a.add(workspace)
}
