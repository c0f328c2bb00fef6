package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// page is a Markdown file as the link and target checks read it: its prose (text outside
// code, where links count) and its code (fenced blocks and inline spans, where commands are).
type page struct {
	path     string   // relative to the repository root, with forward slashes
	prose    []string // lines outside fenced code blocks, inline code spans blanked out
	code     []string // lines of fenced code blocks, and the text of each inline code span
	headings []string // the text of every ATX heading outside fenced code, in order
}

// inlineCode is a code span on one line: one or more backticks, the code, as many backticks.
var inlineCode = regexp.MustCompile("(`+)([^`]|[^`].*?[^`])(`+)")

// readPage splits a Markdown file into prose, code and headings.
func readPage(root, rel string) (page, error) {
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return page{}, err
	}
	p := page{path: rel}
	inFence := false
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			inFence = !inFence
			continue
		}
		if inFence {
			// A shell comment is prose ("make sure"), not a command.
			p.code = append(p.code, shellComment.ReplaceAllString(line, ""))
			continue
		}
		for _, m := range inlineCode.FindAllStringSubmatch(line, -1) {
			p.code = append(p.code, m[2])
		}
		prose := inlineCode.ReplaceAllString(line, "``")
		p.prose = append(p.prose, prose)
		if h, ok := strings.CutPrefix(line, "#"); ok {
			h = strings.TrimLeft(h, "#")
			if strings.HasPrefix(h, " ") {
				p.headings = append(p.headings, strings.TrimSpace(h))
			}
		}
	}
	return p, nil
}

// shellComment is a comment in a code block: a # at the start or after a space, to the end.
var shellComment = regexp.MustCompile(`(^|\s)#.*$`)

// link is a Markdown link or image in a page's prose.
var link = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// links returns the targets of the page's links, in order.
func (p page) links() []string {
	var out []string
	for _, line := range p.prose {
		for _, m := range link.FindAllStringSubmatch(line, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// anchors returns the fragment identifiers GitHub gives the page's headings: lower case,
// every character but letters, digits, spaces, hyphens and underscores dropped, spaces as
// hyphens, and "-1", "-2", ... after repeats.
func (p page) anchors() map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, h := range p.headings {
		a := slug(h)
		if n := seen[a]; n > 0 {
			seen[a]++
			a = a + "-" + strconv.Itoa(n)
		} else {
			seen[a] = 1
		}
		out[a] = true
	}
	return out
}

func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// commandSeparator splits a line of shell into commands.
var commandSeparator = regexp.MustCompile(`&&|\|\||;|\|`)

// makeTargets returns the targets of every make command in the page's code: a command is
// an inline code span, or a line of a code block (after a `$ ` prompt), split at shell
// separators, whose first word is make; its targets are the arguments that are neither
// variables (NAME=value) nor options (-j4). Prose in a code block ("make sure it runs" in
// a command's output) starts no command, so it is not read as one.
func (p page) makeTargets() []string {
	var out []string
	for _, c := range p.code {
		for _, cmd := range commandSeparator.Split(c, -1) {
			cmd = strings.TrimPrefix(strings.TrimSpace(cmd), "$ ")
			cmd = strings.TrimPrefix(cmd, "(")
			args, ok := strings.CutPrefix(cmd, "make ")
			if !ok {
				continue
			}
			quoted := false // inside a quoted variable value such as VAR="--rate 50"
			for _, arg := range strings.Fields(args) {
				if quotes := strings.Count(arg, `"`) + strings.Count(arg, "'"); quoted || quotes%2 == 1 {
					quoted = quoted != (quotes%2 == 1)
					continue
				}
				if strings.Contains(arg, "=") || strings.HasPrefix(arg, "-") {
					continue
				}
				if !isTargetName(arg) {
					break
				}
				out = append(out, arg)
			}
		}
	}
	return out
}

func isTargetName(s string) bool {
	return s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789-_.") == ""
}

// makefileTarget is a rule's target list at the start of a line (not a := assignment).
var makefileTarget = regexp.MustCompile(`^([A-Za-z0-9_.\- ]+):(?:[^=]|$)`)

// makefileTargets returns the targets the Makefile defines.
func makefileTargets(root string) (map[string]bool, error) {
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if m := makefileTarget.FindStringSubmatch(line); m != nil {
			for _, t := range strings.Fields(m[1]) {
				out[t] = true
			}
		}
	}
	return out, nil
}
