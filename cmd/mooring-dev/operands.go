package main

import "slices"

// operands says how many arguments besides flags a command takes.
type operands struct {
	min, max int // max < 0: no limit
	first    []string
	usage    string
}

func (o operands) fits(args []string) bool {
	if len(args) < o.min || (o.max >= 0 && len(args) > o.max) {
		return false
	}
	return len(o.first) == 0 || len(args) > 0 && slices.Contains(o.first, args[0])
}

// commandOperands are the commands that take arguments besides flags; every other takes
// none.
var commandOperands = map[string]operands{
	"run": {usage: "mooring-dev run [flags]"}, "up": {usage: "mooring-dev up [flags]"},
	"down": {usage: "mooring-dev down [flags]"}, "clean": {usage: "mooring-dev clean [flags]"},
	"status": {usage: "mooring-dev status [flags]"},
	"restart": {min: 1, max: 1,
		usage: "mooring-dev restart <component> [flags]; mooring-dev status lists the components"},
	"image": {min: 1, max: -1, first: []string{"load", "list"},
		usage: "mooring-dev image load <image.tar>... | mooring-dev image list"},
	"fault": {min: 1, max: 3, first: []string{"node-stop", "node-start", "partition", "heal", "kill"}, usage: faultUsage},
}
