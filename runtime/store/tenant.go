package store

import "context"

type workspaceKey struct{}

// WithWorkspace marks ctx as acting inside workspace. On PostgreSQL every statement run with such a
// context runs with records.workspace_id set to it, which the row-level security policies of the
// record tables check: a second guard behind the workspace_id predicate of every statement. A
// context without a workspace sees no record rows at all.
func WithWorkspace(ctx context.Context, workspace string) context.Context {
	return context.WithValue(ctx, workspaceKey{}, workspace)
}

func workspaceOf(ctx context.Context) string {
	ws, _ := ctx.Value(workspaceKey{}).(string)
	return ws
}

// setWorkspace is the statement that scopes the current transaction to a workspace.
const setWorkspace = "SELECT set_config('records.workspace_id', $1, true)"

// setSessionWorkspace scopes a connection's session to a workspace (PostgreSQL; see Postgres.Query).
const setSessionWorkspace = "SELECT set_config('records.workspace_id', $1, false)"
