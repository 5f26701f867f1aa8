package cli

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/internal/version"
)

func runVersion(_ context.Context, env *Env, args []string) error {
	fs := newFlags(env, "version", "[--json]", "Print the version of this sluice binary and the Go release it was built with.")
	asJSON := fs.Bool("json", false, "print JSON")
	if _, err := parseArgs(fs, args, 0, 0, "no arguments"); err != nil {
		return err
	}
	if *asJSON {
		return printValue(env.Stdout, version.Get())
	}
	_, err := fmt.Fprintln(env.Stdout, version.String())
	return err
}
