package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sluicehq/sluice/internal/version"
)

func runVersion(_ context.Context, env *Env, args []string) error {
	fs := newFlags(env, "version", "[--json]", "Print the version of this sluice binary and the Go release it was built with.")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, 0, "no arguments"); err != nil {
		return err
	}
	if *asJSON {
		b, err := json.MarshalIndent(version.Get(), "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(env.Stdout, "%s\n", b)
		return err
	}
	_, err = fmt.Fprintln(env.Stdout, version.String())
	return err
}
