// Package docrun runs the shell examples of the documentation: it finds every fenced shell block
// of the Markdown files (and every curl or sluice line in the comments of deployment files), reads
// the marker before it that says how to run it, and runs each session of blocks in bash against a
// real `sluice server`, so a command in the docs that no longer works fails the tests.
//
// The marker convention is described for writers in docs/contributing.md.
package docrun

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Block is one example: a fenced block of a Markdown file, or the command lines of a comment in a
// deployment file.
type Block struct {
	// File is the path of the file, relative to the repository root, with forward slashes.
	File string
	// Line is the 1-based line of the block's first line of text (the line after a fence).
	Line int
	// Lang is the fence's info word ("sh", "json", "" when none); "sh" for a deployment comment.
	Lang string
	// Text holds the block's lines, with the indentation of the fence removed.
	Text []string
	// Marker is what the marker before the block says (the zero Marker when there is none).
	Marker Marker
}

// Where names the block in messages: "docs/server.md:23".
func (b Block) Where() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

// Shell reports whether the block is a shell example (and so must be run or marked skipped).
func (b Block) Shell() bool { return shellLangs[b.Lang] }

var shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true, "zsh": true}

var (
	fenceRE      = regexp.MustCompile("^(\\s*)(```+|~~~+)\\s*([^\\s`]*)")
	mdMarkerRE   = regexp.MustCompile(`^\s*<!--\s*docrun:(.*?)-->\s*$`)
	confMarkerRE = regexp.MustCompile(`^\s*(?:#|//)\s*docrun:(.*)$`)
	// confCommandRE finds a command in a deployment file's comment: a line of the comment that
	// starts with curl or sluice.
	confCommandRE = regexp.MustCompile(`^\s*(?:#|//)\s*((?:curl|sluice)\s.*)$`)
)

// Extract reads the examples of the files (paths relative to root). Markdown files (.md) give
// their fenced blocks; other files give the curl and sluice lines of their comments, one block per
// run of consecutive such lines.
func Extract(root string, files []string) ([]Block, error) {
	var all []Block
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f)) //nolint:gosec // the repository's own docs
		if err != nil {
			return nil, err
		}
		lines := splitLines(string(data))
		var blocks []Block
		if strings.HasSuffix(f, ".md") {
			blocks, err = markdownBlocks(f, lines)
		} else {
			blocks, err = commentBlocks(f, lines)
		}
		if err != nil {
			return nil, err
		}
		all = append(all, blocks...)
	}
	return all, nil
}

func splitLines(s string) []string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// markdownBlocks returns the fenced blocks of a Markdown file with the markers before them. A
// marker is an HTML comment on the last non-blank line before the fence.
func markdownBlocks(file string, lines []string) ([]Block, error) {
	var blocks []Block
	var pending *Marker // the marker seen last, not yet attached
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if m := mdMarkerRE.FindStringSubmatch(line); m != nil {
			if pending != nil {
				return nil, fmt.Errorf("%s:%d: a docrun marker that no fenced block follows", file, pending.Line)
			}
			mk, err := ParseMarker(m[1])
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", file, i+1, err)
			}
			mk.Line = i + 1
			pending = &mk
			continue
		}
		if strings.Contains(line, "docrun:") && strings.Contains(line, "<!--") {
			return nil, fmt.Errorf("%s:%d: a docrun marker is one comment on one line: <!-- docrun: ... -->", file, i+1)
		}
		fm := fenceRE.FindStringSubmatch(line)
		if fm == nil {
			if pending != nil && strings.TrimSpace(line) != "" {
				return nil, fmt.Errorf("%s:%d: a docrun marker that no fenced block follows", file, pending.Line)
			}
			continue
		}
		indent, fence, lang := fm[1], fm[2], fm[3]
		b := Block{File: file, Line: i + 2, Lang: lang}
		if pending != nil {
			b.Marker = *pending
			pending = nil
		}
		j := i + 1
		for ; j < len(lines); j++ {
			if closesFence(lines[j], fence) {
				break
			}
			b.Text = append(b.Text, strings.TrimPrefix(lines[j], indent))
		}
		if j == len(lines) {
			return nil, fmt.Errorf("%s:%d: a fenced block that never closes", file, i+1)
		}
		blocks = append(blocks, b)
		i = j
	}
	if pending != nil {
		return nil, fmt.Errorf("%s:%d: a docrun marker that no fenced block follows", file, pending.Line)
	}
	return blocks, nil
}

// closesFence reports whether line closes a block opened with fence: only fence characters of
// the same kind, at least as many.
func closesFence(line, fence string) bool {
	t := strings.TrimSpace(line)
	return len(t) >= len(fence) && strings.Trim(t, fence[:1]) == ""
}

// commentBlocks returns the curl and sluice lines of a deployment file's comments (with their
// continuation lines), one block per run of them, each with the "# docrun:" marker on the comment
// line before it.
func commentBlocks(file string, lines []string) ([]Block, error) {
	var blocks []Block
	for i := 0; i < len(lines); i++ {
		m := confCommandRE.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		b := Block{File: file, Line: i + 1, Lang: "sh"}
		if i > 0 {
			if mm := confMarkerRE.FindStringSubmatch(lines[i-1]); mm != nil {
				mk, err := ParseMarker(mm[1])
				if err != nil {
					return nil, fmt.Errorf("%s:%d: %w", file, i, err)
				}
				mk.Line = i
				b.Marker = mk
			}
		}
		b.Text = append(b.Text, m[1])
		for strings.HasSuffix(strings.TrimSpace(b.Text[len(b.Text)-1]), "\\") && i+1 < len(lines) {
			i++
			b.Text = append(b.Text, strings.TrimLeft(strings.TrimSpace(lines[i]), "#/ "))
		}
		for i+1 < len(lines) {
			next := confCommandRE.FindStringSubmatch(lines[i+1])
			if next == nil {
				break
			}
			i++
			b.Text = append(b.Text, next[1])
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}
