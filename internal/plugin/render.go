package plugin

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/mooringhq/mooring/internal/objecttree"
)

// renderOptions say how trees are drawn.
type renderOptions struct {
	// Now is the time ages are measured from.
	Now time.Time
	// Color paints the STATUS column and condition lines (only on a terminal).
	Color bool
	// ShowConditions prints every condition, not only those that are not True.
	ShowConditions bool
	// Namespaces adds a NAMESPACE column (for --all-namespaces).
	Namespaces bool
}

const (
	colorReset  = "\x1b[0m"
	colorGreen  = "\x1b[32m"
	colorYellow = "\x1b[33m"
	colorRed    = "\x1b[31m"
)

var stateColor = map[objecttree.State]string{objecttree.StateOK: colorGreen, objecttree.StateWarning: colorYellow, objecttree.StateError: colorRed}

// row is one printed line: a node with columns, or a condition under a node.
type row struct {
	cells     []string // NAMESPACE?, NAME, READY, STATUS, AGE, DETAILS
	state     objecttree.State
	condition string // set on condition lines, which do not take part in the columns
	condState objecttree.State
}

// renderTrees writes the trees as a table whose NAME column draws the ownership tree,
// in the style of `clusterctl describe` and `kubectl cnpg status`.
func renderTrees(w io.Writer, roots []*objecttree.Node, o renderOptions) error {
	if len(roots) == 0 {
		_, err := fmt.Fprintln(w, "No Mooring objects found.")
		return err
	}
	header := []string{"NAME", "READY", "STATUS", "AGE", "DETAILS"}
	if o.Namespaces {
		header = append([]string{"NAMESPACE"}, header...)
	}
	rows := []row{{cells: header}}
	for _, r := range roots {
		rows = appendRows(rows, r, "", "", o)
	}
	statusCol := len(header) - 3
	widths := make([]int, len(header))
	for _, r := range rows {
		for i, c := range r.cells {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		if r.cells == nil {
			if o.Namespaces {
				b.WriteString(strings.Repeat(" ", widths[0]+2))
			}
			b.WriteString(paint(r.condition, r.condState, o.Color))
			b.WriteByte('\n')
			continue
		}
		var line strings.Builder
		for i, c := range r.cells {
			if i == len(r.cells)-1 {
				line.WriteString(c)
				break
			}
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2)
			if i == statusCol {
				c = paint(c, r.state, o.Color)
			}
			line.WriteString(c + pad)
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// appendRows adds n, its conditions and its children. prefix is drawn before n's name,
// indent before the lines that hang under n.
func appendRows(rows []row, n *objecttree.Node, prefix, indent string, o renderOptions) []row {
	cells := []string{prefix + n.Kind + "/" + n.Name, dash(n.Ready), dash(n.Status), age(n.Created, o.Now), details(n.Details, o.Now)}
	if o.Namespaces {
		cells = append([]string{n.Namespace}, cells...)
	}
	rows = append(rows, row{cells: cells, state: n.State})
	// Conditions hang under the node, continuing its children's vertical line.
	condIndent := indent + "  "
	if len(n.Children) > 0 {
		condIndent = indent + "│ "
	}
	for _, c := range n.Conditions {
		if !o.ShowConditions && !c.Abnormal {
			continue
		}
		st := objecttree.StateOK
		if c.Abnormal {
			st = objecttree.StateWarning
		}
		text := fmt.Sprintf("%s%s=%s", condIndent, c.Type, c.Status)
		if c.Reason != "" {
			text += " " + c.Reason
		}
		if c.Message != "" {
			text += ": " + c.Message
		}
		rows = append(rows, row{condition: text, condState: st})
	}
	for i, c := range n.Children {
		branch, next := "├─", "│ "
		if i == len(n.Children)-1 {
			branch, next = "└─", "  "
		}
		rows = appendRows(rows, c, indent+branch, indent+next, o)
	}
	return rows
}

func paint(s string, st objecttree.State, color bool) string {
	if c, ok := stateColor[st]; ok && color && s != "" {
		return c + s + colorReset
	}
	return s
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// age is how long ago t was, as kubectl prints it ("5m", "2d3h").
func age(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return duration.HumanDuration(now.Sub(t))
}

// details joins the details, times relative to now: "last success 5m ago", "next run in 2h".
func details(ds []objecttree.Detail, now time.Time) string {
	parts := make([]string, 0, len(ds))
	for _, d := range ds {
		switch {
		case d.Time == nil && d.Value == "":
			parts = append(parts, d.Name)
		case d.Time == nil:
			parts = append(parts, d.Name+" "+d.Value)
		case d.Time.After(now):
			parts = append(parts, d.Name+" in "+duration.HumanDuration(d.Time.Sub(now)))
		default:
			parts = append(parts, d.Name+" "+duration.HumanDuration(now.Sub(*d.Time))+" ago")
		}
	}
	return strings.Join(parts, ", ")
}
