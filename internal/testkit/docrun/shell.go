package docrun

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// command is one shell command of a block: the lines it spans (a line ending in "\" or "|", or
// inside an open quote, goes on to the next) and the comments on them and on the comment lines
// right below it, which is where the docs say what a command answers.
type command struct {
	first, last int    // indexes into the block's Text
	code        string // the command without its comments, lines joined with "\n"
	comments    []string
}

// heredocRE finds the start of a here-document: <<EOF, <<-EOF, <<'EOF', <<"EOF".
var heredocRE = regexp.MustCompile(`<<-?\s*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?`)

// commands splits a block's lines into commands. It knows quotes, backslashes, comments and
// here-documents: enough of the shell for documentation, not all of it.
func commands(text []string) []command {
	var cmds []command
	var cur *command
	var quote byte  // the open quote carried from one line to the next, 0 when none
	lastEnded := -1 // index in cmds of the command that the next comment lines describe
	for i := 0; i < len(text); i++ {
		line := text[i]
		if cur == nil {
			trimmed := strings.TrimSpace(line)
			switch {
			case trimmed == "":
				lastEnded = -1
				continue
			case strings.HasPrefix(trimmed, "#"):
				if lastEnded >= 0 {
					cmds[lastEnded].comments = append(cmds[lastEnded].comments, strings.TrimPrefix(trimmed, "#"))
				}
				continue
			}
			cur = &command{first: i}
		}
		code, comment, open, cont := scanLine(line, quote)
		quote = open
		if comment != "" {
			cur.comments = append(cur.comments, comment)
		}
		if cur.code != "" {
			cur.code += "\n"
		}
		cur.code += code
		if m := heredocRE.FindStringSubmatch(code); m != nil && open == 0 {
			for i+1 < len(text) {
				i++
				cur.code += "\n" + text[i]
				if strings.TrimSpace(text[i]) == m[1] {
					break
				}
			}
			cont = false
		}
		if open != 0 || cont {
			continue
		}
		cur.last = i
		cmds = append(cmds, *cur)
		lastEnded = len(cmds) - 1
		cur = nil
	}
	if cur != nil {
		cur.last = len(text) - 1
		cmds = append(cmds, *cur)
	}
	return cmds
}

// scanLine reads one line that starts inside quote (0: outside any). It returns the line without
// its comment, the comment's text, the quote still open at its end, and whether the command goes
// on to the next line (a trailing backslash, pipe or && / ||).
func scanLine(line string, quote byte) (code, comment string, open byte, cont bool) {
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			}
		case c == '\\':
			i++ // the escaped character, inside double quotes or outside any
		case quote == '"':
			if c == '"' {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return strings.TrimRight(line[:i], " \t"), line[i+1:], 0, continues(line[:i])
		}
	}
	if quote != 0 {
		return line, "", quote, false
	}
	return line, "", 0, continues(line)
}

func continues(code string) bool {
	t := strings.TrimRight(code, " \t")
	return strings.HasSuffix(t, "\\") || strings.HasSuffix(t, "|") || strings.HasSuffix(t, "&&")
}

// expectedStatuses are the HTTP statuses a command's comments name: three-digit numbers from 100
// to 599 standing as words ("# 404 when it does not exist", "(204 No Content)"), not values in
// JSON ("max_queued":500 and "limit": 100 are no statuses).
func (c command) expectedStatuses() []int {
	var codes []int
	for _, text := range c.comments {
		for i := 0; i+3 <= len(text); i++ {
			if !isDigits(text[i:i+3]) || (i > 0 && !statusBefore(text[i-1])) ||
				(i+3 < len(text) && !statusAfter(text[i+3])) || strings.HasSuffix(text[:i], ": ") {
				continue
			}
			n, _ := strconv.Atoi(text[i : i+3])
			if n >= 100 && n <= 599 && !slices.Contains(codes, n) {
				codes = append(codes, n)
			}
		}
	}
	return codes
}

func isDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func statusBefore(c byte) bool { return c == ' ' || c == '(' || c == '\t' }
func statusAfter(c byte) bool  { return strings.IndexByte(" \t),;.:", c) >= 0 }
