// Package cli implements the sluice command line: the server, the client commands that talk to a
// server over HTTP, and the load generator. cmd/sluice only calls Main.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
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
	// SetProcs sets how many processors run the process's Go code and returns the previous
	// number (runtime.GOMAXPROCS); `sluice bench --procs` uses it. nil leaves the process alone, as
	// in tests, where commands run inside the test binary.
	SetProcs func(n int) int
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
	return MainEnv(ctx, args, &Env{Stdin: stdin, Stdout: stdout, Stderr: stderr, Getenv: osGetenv, SetProcs: runtime.GOMAXPROCS})
}

// MainEnv is Main with an explicit environment.
func MainEnv(ctx context.Context, args []string, env *Env) int {
	table := commandTable()
	if len(args) > 1 && args[0] == "help" {
		// `sluice help publish` is `sluice publish -h`.
		args = append(args[1:len(args):len(args)], "-h")
	}
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
		if subs := subcommands(table, name); len(subs) > 0 {
			fmt.Fprintf(env.Stderr, "sluice %s: want a subcommand: %s\n", name, strings.Join(subs, ", "))
			return exitUsage
		}
		fmt.Fprintf(env.Stderr, "sluice: unknown command %q\n\n", strings.Join(args[:min(2, len(args))], " "))
		usage(env.Stderr, table)
		return 2
	}
	return exitCode(env, name, cmd.run(ctx, env, rest))
}

// Exit codes of the sluice command.
const (
	exitOK    = 0
	exitError = 1 // the command failed: the server refused it, or could not be reached
	exitUsage = 2 // bad flags or arguments
)

// errHelp is returned by a command that printed its help because it was asked to (-h).
var errHelp = errors.New("help requested")

// usageError is a mistake in a command's flags or arguments.
type usageError struct {
	msg string
}

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

// exitCode reports a command's error on stderr and returns the exit code it calls for.
func exitCode(env *Env, name string, err error) int {
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errHelp):
		return exitOK
	case errors.Is(err, errFlagParse):
		// The flag package already printed the problem and the command's usage.
		return exitUsage
	case errors.As(err, &ue):
		fmt.Fprintf(env.Stderr, "sluice %s: %v\nRun `sluice %s -h` for its usage.\n", name, err, name)
		return exitUsage
	default:
		fmt.Fprintf(env.Stderr, "sluice %s: %v\n", name, err)
		return exitError
	}
}

// subcommands lists the second words of the two-word commands that start with group ("dead":
// list, respawn).
func subcommands(table map[string]command, group string) []string {
	var out []string
	for n := range table {
		if sub, ok := strings.CutPrefix(n, group+" "); ok {
			out = append(out, sub)
		}
	}
	sort.Strings(out)
	return out
}

func usage(w io.Writer, table map[string]command) {
	names := make([]string, 0, len(table))
	for n := range table {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "Usage: sluice <command> [flags] [arguments]\n\nCommands:")
	for _, n := range names {
		fmt.Fprintf(w, "  %-16s %s\n", n, table[n].summary)
	}
	fmt.Fprint(w, `
Client commands talk to a server at $SLUICE_URL (default http://127.0.0.1:7777) with the token in
$SLUICE_TOKEN, in namespace $SLUICE_NAMESPACE (default "default"); token commands use the admin
API at $SLUICE_ADMIN_URL (default http://127.0.0.1:7778) with $SLUICE_ADMIN_TOKEN. Flags override
the environment.

Run `+"`sluice <command> -h`"+` for a command's flags.
`)
}
