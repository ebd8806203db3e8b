package dialog

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"selmix/tui/pane"
	"selmix/tui/style"
)

// HelpID is the help dialog's ID.
const HelpID = "help"

// Item is one key of the help: its binding and what it does.
type Item struct {
	B    key.Binding
	Desc string
}

// Group is a titled list of keys.
type Group struct {
	Name  string
	Items []Item
}

// Help lists keys by group: in one column when the screen is tall enough
// (in the order One), else in two (Left and Right). Any key closes it.
type Help struct {
	ctx              *pane.Context
	groups           []Group
	one, left, right []int
	footer           string
}

// NewHelp returns the help of groups with footer (a dim last line; ""
// for none). one, left and right order the groups for one column and
// two; nil means all groups in their order (two columns: halves).
func NewHelp(ctx *pane.Context, groups []Group, footer string, one, left, right []int) *Help {
	all := make([]int, len(groups))
	for i := range all {
		all[i] = i
	}
	if one == nil {
		one = all
	}
	if left == nil && right == nil {
		h := (len(groups) + 1) / 2
		left, right = all[:h], all[h:]
	}
	return &Help{ctx: ctx, groups: groups, footer: footer, one: one, left: left, right: right}
}

func (d *Help) ID() string    { return HelpID }
func (d *Help) Title() string { return "keys · any key closes" }

func (d *Help) Update(tea.KeyPressMsg) Action { return Close{} }

func (d *Help) render(gs []int) []string {
	th := d.ctx.Theme
	var out []string
	for n, gi := range gs {
		if n > 0 {
			out = append(out, "")
		}
		g := d.groups[gi]
		out = append(out, th.Render(th.Bold, g.Name))
		for _, it := range g.Items {
			ks := strings.ReplaceAll(strings.Join(it.B.Keys(), " "), "backspace", "bksp")
			out = append(out, fmt.Sprintf("  %-10s %s", ks, it.Desc))
		}
	}
	return out
}

// View is the key list for a screen h lines tall.
func (d *Help) View(w, h int) string {
	var footer []string
	if d.footer != "" {
		footer = []string{"", d.ctx.Theme.Render(d.ctx.Theme.Dim, d.footer)}
	}
	one := d.render(d.one)
	if len(one)+len(footer)+2 <= h {
		return strings.Join(append(one, footer...), "\n")
	}
	// Two columns; when they are too tall the blank line before the
	// footer goes.
	left, right := d.render(d.left), d.render(d.right)
	if len(footer) > 0 && max(len(left), len(right))+len(footer)+2 > h {
		footer = footer[1:]
	}
	const colW = 38
	var lines []string
	for i := range max(len(left), len(right)) {
		l, r := "", ""
		if i < len(left) {
			l = left[i]
		}
		if i < len(right) {
			r = right[i]
		}
		lines = append(lines, style.PadRight(l, colW)+r)
	}
	return strings.Join(append(lines, footer...), "\n")
}
