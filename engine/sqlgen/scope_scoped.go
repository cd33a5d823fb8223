//go:build !recordstest_unscoped

package sqlgen

// workspacePredicate: every statement filters on workspace_id (see scope).
const workspacePredicate = true
