package main

import "testing"

func TestCommandOperands(t *testing.T) {
	tests := map[string]struct {
		cmd  string
		args []string
		want bool
	}{
		"run takes none":               {"run", nil, true},
		"run refuses one":              {"run", []string{"x"}, false},
		"restart needs its component":  {"restart", nil, false},
		"restart with a component":     {"restart", []string{"kubelet"}, true},
		"restart with two":             {"restart", []string{"a", "b"}, false},
		"image load":                   {"image", []string{"load", "a.tar", "b.tar"}, true},
		"image list":                   {"image", []string{"list"}, true},
		"image unknown verb":           {"image", []string{"push", "a.tar"}, false},
		"fault node-stop":              {"fault", []string{"node-stop"}, true},
		"fault kill pod container":     {"fault", []string{"kill", "shop/web-0", "app"}, true},
		"fault unknown verb":           {"fault", []string{"explode"}, false},
		"fault with too many operands": {"fault", []string{"kill", "a", "b", "c"}, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := commandOperands[tc.cmd].fits(tc.args); got != tc.want {
				t.Fatalf("%s %v fits = %v, want %v", tc.cmd, tc.args, got, tc.want)
			}
		})
	}
}
