package engine

import (
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	long := make([]change, 60)
	for i := range long {
		long[i] = change{"ConfigMap", strings.Repeat("n", 20), changeCreated}
	}
	tests := map[string]struct {
		in                  []change
		reason, action, in0 string
	}{
		"all created": {
			in:     []change{{"ConfigMap", "web-config", changeCreated}, {"Deployment", "web", changeCreated}},
			reason: EventCreated, action: "Apply", in0: "ConfigMap web-config created, Deployment web created.",
		},
		"all deleted": {
			in:     []change{{"Service", "web", changeDeleted}},
			reason: EventDeleted, action: "Delete", in0: "Service web deleted.",
		},
		"mixed": {
			in:     []change{{"Deployment", "web", changeUpdated}, {"Service", "web", changeDeleted}},
			reason: EventUpdated, action: "Apply", in0: "Deployment web updated, Service web deleted.",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			reason, action, note := summarize(tc.in)
			if reason != tc.reason || action != tc.action || note != tc.in0 {
				t.Fatalf("got %q %q %q, want %q %q %q", reason, action, note, tc.reason, tc.action, tc.in0)
			}
		})
	}
	_, _, note := summarize(long)
	if len(note) > maxEventNote || !strings.HasSuffix(note, "...") {
		t.Fatalf("a long summary is cut to %d bytes with an ellipsis; got %d bytes: %q", maxEventNote, len(note), note[len(note)-10:])
	}
}
