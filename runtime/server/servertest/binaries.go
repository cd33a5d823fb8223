package servertest

import (
	"fmt"
	"os"
	"path/filepath"
)

// BinEnv names a directory holding recordsd and recordsctl already built from the working tree: make test
// builds them there once for every test package that runs them, instead of each building its own.
const BinEnv = "RECORDS_TEST_BIN"

// RunWithBinaries is a TestMain body for tests that run the module's commands (cmd/NAME): it points *bin
// at the directory BinEnv names, which must hold every one of names, and runs the tests; without BinEnv it
// leaves all to build (proc.RunTests: the commands built for this test binary). It returns the code for
// os.Exit.
func RunWithBinaries(m interface{ Run() int }, build func(m interface{ Run() int }, repo string, bin *string, names ...string) int, bin *string, names ...string) int {
	dir := os.Getenv(BinEnv)
	if dir == "" {
		return build(m, RepoDir(), bin, names...)
	}
	for _, name := range names {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Mode()&0o111 == 0 {
			fmt.Fprintf(os.Stderr, "%s=%s has no program %s (%v); unset it to build the commands here\n", BinEnv, dir, name, err)
			return 2
		}
	}
	*bin = dir
	return m.Run()
}
