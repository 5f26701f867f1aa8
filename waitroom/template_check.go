package waitroom

import (
	"fmt"
	"html/template"
	"reflect"
	"strings"
	"text/template/parse"
)

// checkTemplate parses a room's own waiting page and checks every field it names on the page's
// data ({{.Position}}, {{.Text.Title}}, {{$.Script.Next}}) against PageData, so a misspelt field is
// refused when the room is set, with its name, instead of failing each time the page is shown
// (when the room falls back to the built-in page). Fields read inside {{range}} or {{with}} are
// on another value than the page's data and are left to the template engine.
func checkTemplate(text string) error {
	t, err := template.New("room").Parse(text)
	if err != nil {
		return fmt.Errorf("does not parse: %w", err)
	}
	for _, tt := range t.Templates() {
		if tt.Tree == nil {
			continue
		}
		if err := checkFields(tt.Tree.Root, true); err != nil {
			return err
		}
	}
	return nil
}

var pageDataType = reflect.TypeFor[PageData]()

// checkFields walks node; dotIsPage says whether "." is still the page's data there.
func checkFields(node parse.Node, dotIsPage bool) error {
	switch n := node.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := checkFields(c, dotIsPage); err != nil {
				return err
			}
		}
	case *parse.ActionNode:
		return checkFields(n.Pipe, dotIsPage)
	case *parse.PipeNode:
		if n == nil {
			return nil
		}
		for _, cmd := range n.Cmds {
			for _, arg := range cmd.Args {
				if err := checkFields(arg, dotIsPage); err != nil {
					return err
				}
			}
		}
	case *parse.FieldNode:
		if dotIsPage {
			return checkPath(n.Ident)
		}
	case *parse.VariableNode:
		if len(n.Ident) > 1 && n.Ident[0] == "$" {
			return checkPath(n.Ident[1:])
		}
	case *parse.ChainNode:
		return checkFields(n.Node, dotIsPage)
	case *parse.IfNode:
		return checkBranch(&n.BranchNode, dotIsPage, dotIsPage)
	case *parse.RangeNode:
		return checkBranch(&n.BranchNode, dotIsPage, false)
	case *parse.WithNode:
		return checkBranch(&n.BranchNode, dotIsPage, false)
	case *parse.TemplateNode:
		return checkFields(n.Pipe, dotIsPage)
	}
	return nil
}

// checkBranch checks an if, range or with: its pipeline where it stands, its body with inner as
// what "." is, and its else branch where it stands.
func checkBranch(b *parse.BranchNode, dotIsPage, inner bool) error {
	if err := checkFields(b.Pipe, dotIsPage); err != nil {
		return err
	}
	if err := checkFields(b.List, inner); err != nil {
		return err
	}
	return checkFields(b.ElseList, dotIsPage)
}

// checkPath checks a chain of field names from PageData down; a map (Script.Text) takes any key.
func checkPath(path []string) error {
	t := pageDataType
	for i, name := range path {
		if t.Kind() == reflect.Map {
			return nil
		}
		if _, ok := reflect.PointerTo(t).MethodByName(name); ok {
			return nil
		}
		var f reflect.StructField
		ok := false
		if t.Kind() == reflect.Struct {
			f, ok = t.FieldByName(name)
		}
		if !ok || !f.IsExported() {
			return fmt.Errorf("names the field %q, which the page's data has not (fields: %s)",
				strings.Join(path[:i+1], "."), fieldNames(t))
		}
		t = f.Type
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
	}
	return nil
}

// fieldNames lists t's exported fields, for the error.
func fieldNames(t reflect.Type) string {
	if t.Kind() != reflect.Struct {
		return "none: " + t.String() + " has no fields"
	}
	var names []string
	for f := range t.Fields() {
		if f.IsExported() {
			names = append(names, f.Name)
		}
	}
	return strings.Join(names, ", ")
}
