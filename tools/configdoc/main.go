// Command configdoc rewrites the configuration table of README.md (between the config-table markers)
// from the settings table of runtime/config. Run it from the repository root: make config-doc.
//
//	go run ./tools/configdoc [-check] [README.md]
//
// With -check it changes nothing and fails when the README's table is out of date.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/workspace-records/records/runtime/config"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "configdoc:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("configdoc", flag.ContinueOnError)
	check := fs.Bool("check", false, "fail if the table is out of date instead of rewriting it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	path := "README.md"
	if fs.NArg() > 1 {
		return fmt.Errorf("usage: configdoc [-check] [README.md]")
	}
	if fs.NArg() == 1 {
		path = fs.Arg(0)
	}
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := config.ReplaceTable(doc)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if bytes.Equal(out, doc) {
		return nil
	}
	if *check {
		return fmt.Errorf("%s: the configuration table is out of date; run make config-doc", path)
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, st.Mode().Perm())
}
