package engine

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// What a reconcile did to a child.
const (
	changeCreated = "created"
	changeUpdated = "updated"
	changeDeleted = "deleted"
)

type change struct{ kind, name, verb string }

// maxEventNote keeps the summary under the API server's 1 KiB limit of an event's note.
const maxEventNote = 1000

// reportChanges records one Normal event for everything the reconcile did to children,
// rather than one per child: events are API writes too, and a new object's three
// children cost one event instead of three. The reason is Created, Deleted or Updated
// when every change was of that kind, Updated otherwise.
func (s *Scope[T]) reportChanges() {
	if len(s.changes) == 0 {
		return
	}
	reason, action, note := summarize(s.changes)
	s.Event(corev1.EventTypeNormal, reason, action, note)
	s.changes = nil
}

// summarize turns a reconcile's changes into one event's reason, action and note.
func summarize(changes []change) (reason, action, note string) {
	verbs := map[string]bool{}
	parts := make([]string, 0, len(changes))
	for _, c := range changes {
		verbs[c.verb] = true
		parts = append(parts, c.kind+" "+c.name+" "+c.verb)
	}
	reason, action = EventUpdated, "Apply"
	if len(verbs) == 1 {
		switch {
		case verbs[changeCreated]:
			reason = EventCreated
		case verbs[changeDeleted]:
			reason, action = EventDeleted, "Delete"
		}
	}
	note = strings.Join(parts, ", ") + "."
	if len(note) > maxEventNote {
		note = note[:maxEventNote-3] + "..."
	}
	return reason, action, note
}
