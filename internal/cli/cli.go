// Package cli implements the sluice command line: the server, the client commands that talk to a
// server over HTTP, and the load generator. cmd/sluice only calls Main.
package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
)

// command is one sluice subcommand. run gets the arguments after the command's name.
type command struct {
	summary string
	run     func(ctx context.Context, env *Env, args []string) error
}

// Env is what a command reads and writes, so tests can run commands in-process.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads configuration such as SLUICE_URL and SLUICE_TOKEN.
	Getenv func(string) string
}

// commands maps a name ("dead list" for two-word commands) to its command. Files of this package
// add theirs in register functions called from commandTable.
func commandTable() map[string]command {
	t := map[string]command{}
	registerServer(t)
	registerClient(t)
	return t
}

// Main runs the command named by args and returns the process exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return MainEnv(ctx, args, &Env{Stdin: stdin, Stdout: stdout, Stderr: stderr, Getenv: osGetenv})
}

// MainEnv is Main with an explicit environment.
func MainEnv(ctx context.Context, args []string, env *Env) int {
	table := commandTable()
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(env.Stdout, table)
		return 0
	}
	name := args[0]
	rest := args[1:]
	if len(rest) > 0 {
		if _, ok := table[name+" "+rest[0]]; ok {
			name, rest = name+" "+rest[0], rest[1:]
		}
	}
	cmd, ok := table[name]
	if !ok {
		fmt.Fprintf(env.Stderr, "sluice: unknown command %q\n\n", strings.Join(args[:min(2, len(args))], " "))
		usage(env.Stderr, table)
		return 2
	}
	if err := cmd.run(ctx, env, rest); err != nil {
		fmt.Fprintf(env.Stderr, "sluice %s: %v\n", name, err)
		return 1
	}
	return 0
}

func usage(w io.Writer, table map[string]command) {
	names := make([]string, 0, len(table))
	for n := range table {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "Usage: sluice <command> [flags]\n\nCommands:")
	for _, n := range names {
		fmt.Fprintf(w, "  %-16s %s\n", n, table[n].summary)
	}
	fmt.Fprintln(w, "\nRun `sluice <command> -h` for a command's flags.")
}
