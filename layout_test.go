package sluice_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/sluicehq/sluice"

// libraries are the packages users import into their own services: they link nothing a user may
// not want (ARCHITECTURE: no server, no Prometheus, no SQL driver, no browser driver).
var libraries = []string{"queue", "queuetest", "callback", "relay", "waitroom", "ratelimit", "cache"}

// deploymentDeps are the module paths a library must not link.
var deploymentDeps = []string{
	"github.com/go-sql-driver/", "github.com/prometheus/", "github.com/chromedp/", module + "/server",
	// Tracing: the libraries use the OpenTelemetry API alone (docs/tracing.md); the SDK, its
	// exporters and gRPC belong to the server, the global provider to the user's choice.
	"go.opentelemetry.io/otel/sdk", "go.opentelemetry.io/otel/exporters/", "google.golang.org/grpc",
	"go.opentelemetry.io/auto/", "github.com/go-logr/",
}

// goPackage is what `go list -json` says of one package.
type goPackage struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func listPackages(t *testing.T) map[string]goPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]goPackage{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p goPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs[strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")] = p
	}
	return pkgs
}

// layoutRow is one row of the package map in docs/layout.md.
type layoutRow struct {
	pkg      string
	mayUse   []string // package paths or patterns ("internal/testkit/*"); "." is the root package
	fileLine int
}

// readLayout reads the package map: the rows of docs/layout.md's table whose first cell is a
// package in backquotes; the third cell lists what it may import, in backquotes ("—" for none).
func readLayout(t *testing.T) []layoutRow {
	t.Helper()
	f, err := os.Open("docs/layout.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []layoutRow
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		cells := strings.Split(sc.Text(), "|")
		if len(cells) < 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		row := layoutRow{pkg: strings.Trim(strings.TrimSpace(cells[1]), "`"), fileLine: n}
		for _, part := range strings.Split(cells[3], "`")[1:] {
			if s := strings.TrimSpace(part); s != "" && !strings.ContainsAny(s, ", ") {
				row.mayUse = append(row.mayUse, s)
			}
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// allowed reports whether imp (a path relative to the module, "." for its root) matches one of
// the patterns.
func allowed(imp string, patterns []string) bool {
	for _, p := range patterns {
		if p == imp {
			return true
		}
		if ok, _ := path.Match(p, imp); ok {
			return true
		}
	}
	return false
}

// TestLayout holds the code to the package map in docs/layout.md: every package has a row, every
// row a package, and each package imports only what its row allows, so no package imports one
// drawn above it.
func TestLayout(t *testing.T) {
	t.Parallel()
	pkgs := listPackages(t)
	rows := readLayout(t)
	if len(rows) == 0 {
		t.Fatal("docs/layout.md has no package rows")
	}
	seen := map[string]bool{}
	for _, row := range rows {
		name := row.pkg
		if name == "." {
			name = ""
		}
		seen[name] = true
		p, ok := pkgs[name]
		if !ok {
			t.Errorf("docs/layout.md:%d: package %q is not in the module", row.fileLine, row.pkg)
			continue
		}
		for _, imp := range p.Imports {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			rel := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
			if rel == "" {
				rel = "."
			}
			if !allowed(rel, row.mayUse) {
				t.Errorf("%s imports %s, which docs/layout.md:%d does not allow", row.pkg, rel, row.fileLine)
			}
		}
	}
	for name := range pkgs {
		if !seen[name] {
			t.Errorf("package %q has no row in docs/layout.md", cmpOrDot(name))
		}
	}
}

func cmpOrDot(s string) string {
	if s == "" {
		return "."
	}
	return s
}

// TestLibrariesLinkNoDeploymentDeps: a service that imports a library links no SQL driver,
// Prometheus, browser driver or the server.
func TestLibrariesLinkNoDeploymentDeps(t *testing.T) {
	t.Parallel()
	pkgs := listPackages(t)
	for _, lib := range libraries {
		p, ok := pkgs[lib]
		if !ok {
			t.Errorf("library %s not found", lib)
			continue
		}
		for _, dep := range p.Deps {
			if slices.ContainsFunc(deploymentDeps, func(bad string) bool { return strings.HasPrefix(dep, bad) }) {
				t.Errorf("%s links %s", lib, dep)
			}
		}
	}
}
