package server

import (
	"bufio"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestOpenAPIMatchesRoutes keeps docs/openapi.yaml in step with the native routes: every
// registered route is described and every described path and method is registered.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	f, err := os.Open("../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var documented []string
	inPaths, path := false, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "paths:":
			inPaths = true
		case inPaths && line != "" && !strings.HasPrefix(line, " "):
			inPaths = false
		case inPaths && strings.HasPrefix(line, "  /") && strings.HasSuffix(line, ":"):
			path = strings.TrimSuffix(strings.TrimSpace(line), ":")
		case inPaths && path != "" && strings.HasPrefix(line, "    ") && !strings.HasPrefix(line, "     "):
			m := strings.TrimSuffix(strings.TrimSpace(line), ":")
			if slices.Contains([]string{"get", "put", "post", "delete", "patch", "head", "options"}, m) {
				documented = append(documented, strings.ToUpper(m)+" "+path)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	s := &Server{}
	registered := []string{"GET /metrics"}
	for _, rt := range append(s.publicRoutes(), s.adminRoutes()...) {
		if !slices.Contains(registered, rt.Pattern) {
			registered = append(registered, rt.Pattern)
		}
	}
	for _, r := range registered {
		if !slices.Contains(documented, r) {
			t.Errorf("route %s is not in docs/openapi.yaml", r)
		}
	}
	for _, d := range documented {
		if !slices.Contains(registered, d) {
			t.Errorf("docs/openapi.yaml describes %s, which no route serves", d)
		}
	}
	if len(documented) < 20 {
		t.Fatalf("read only %d operations from docs/openapi.yaml: %v", len(documented), documented)
	}
}
