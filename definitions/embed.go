// Package definitions holds the shipped resource, role and plan definitions as data. The engine reads
// them through an fs.FS, so a server can also be pointed at a directory on disk (--definitions).
package definitions

import "embed"

// FS holds resources/*.yaml, roles.yaml, plans.yaml and the meta-schemas under meta/.
//
//go:embed resources/*.yaml roles.yaml plans.yaml meta/*.schema.json
var FS embed.FS
