package model

import "sort"

// TypeNames returns the names ParseType accepts, sorted: the types a field definition may declare.
func TypeNames() []string {
	var names []string
	for _, n := range typeNames {
		if _, ok := ParseType(n); ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// ResourceNames returns the names of the catalog's resources, sorted; writable only, without the
// read-only ones.
func (c *Catalog) ResourceNames(writable bool) []string {
	names := make([]string, 0, len(c.Resources))
	for _, r := range c.Resources {
		if !writable || !r.ReadOnly() {
			names = append(names, r.Name)
		}
	}
	return names
}

// PlanNames returns the names of the plans, in the order of plans.yaml.
func (c *Catalog) PlanNames() []string {
	names := make([]string, len(c.Plans))
	for i, p := range c.Plans {
		names[i] = p.Name
	}
	return names
}

// RoleNames returns the names of the built-in roles, in the order of roles.yaml.
func (c *Catalog) RoleNames() []string {
	names := make([]string, len(c.Roles))
	for i, r := range c.Roles {
		names[i] = r.Name
	}
	return names
}
