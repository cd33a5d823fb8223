// Package layers holds the dependency test of the whole module: the layer table of shared/STYLE.md §2
// (rules_test.go), the checker that applies it to the transitive import graph of `go list`
// (check_test.go), and the tests that the real module keeps the rules and that a rule broken on purpose
// fails (layers_test.go).
package layers
