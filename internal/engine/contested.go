package engine

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// A contested field is a field of a child that Mooring sets and that another writer keeps
// changing: an autoscaler Mooring does not know, a script patching spec.replicas. Putting
// it back on every change makes the two writers take turns for ever, each turn costing a
// child write, reconciles, status writes and events, and tells the user nothing. So the
// engine restores such a field at once the first time, then with exponential backoff per
// child and field while the other writer goes on, reports the fight once per backoff
// window (a Warning event and the Contested condition, naming the field, the other field
// manager and how often), and forgets it once the field has kept Mooring's value for a
// while. The desired state still wins: each window ends with a restore.
//
// A drift counts only when what Mooring applies did not change since its last write (the
// child's mooringv1.SpecHashAnnotation matches): a changed spec is applied at once, contest or not.
// The other writer is found in the child's managedFields, which the cache strips
// (internal/manager), so they are read past the cache (metadata only), and only when a
// field drifts a second time or its backoff ends: a converged child costs nothing, a
// one-off hand edit nothing more than before.

// ContestBackoff says how a contested field is restored.
type ContestBackoff struct {
	// Initial is the wait before the second restore of a field another writer changed
	// again; it doubles after each restore, up to Max.
	Initial time.Duration
	// Max caps the wait between two restores.
	Max time.Duration
	// Quiet is how long a field must keep Mooring's value (at least the current wait)
	// before the fight counts as over: the condition is cleared and the next change is
	// restored at once again.
	Quiet time.Duration
}

// DefaultContestBackoff is the backoff of every kind. A process may change it before the
// controllers are set up (the App envtest suite shortens it); it is read once per kind then.
var DefaultContestBackoff = ContestBackoff{Initial: 10 * time.Second, Max: 5 * time.Minute, Quiet: time.Minute}

// maxContestedFields bounds the fields tracked per drifted child: a child rewritten
// wholesale differs in many, and a handful names the problem.
const maxContestedFields = 5

// contests holds the fights of one kind's children, by owner.
type contests struct {
	backoff ContestBackoff
	now     func() time.Time

	mu      sync.Mutex
	byOwner map[types.NamespacedName]map[fieldKey]*contest
}

// fieldKey names one field of one child.
type fieldKey struct {
	gvk   schema.GroupVersionKind
	child string
	field string // formatted path, e.g. spec.replicas
}

// contest is what is known of the writes to one field by others.
type contest struct {
	// first is when the field was first seen changed; changes counts the child's
	// resourceVersions seen with the field changed since.
	first    time.Time
	changes  int
	lastRV   string
	lastSeen time.Time
	// lastRestore is when Mooring last put the field back; delay is the wait after it.
	lastRestore time.Time
	delay       time.Duration
	// contested is set from the second change on, when another manager owns the field.
	contested bool
	writer    fieldWriter
	// message is what the Contested condition says of this field; it changes once per
	// backoff window, so the condition does not rewrite status on every restore.
	message string
}

func newContests(b ContestBackoff) *contests {
	return &contests{backoff: b, now: time.Now, byOwner: map[types.NamespacedName]map[fieldKey]*contest{}}
}

// plan is what the engine does about one drifted child.
type plan struct {
	owner types.NamespacedName
	gvk   schema.GroupVersionKind
	child string
	// fields are the drifted fields, as tracked, and paths their paths.
	fields []fieldKey
	paths  map[fieldKey][]string
	// restore is true when the child is to be applied now.
	restore bool
	// wait, when not zero, is when to reconcile again: the end of the backoff of a field
	// held back, or, after a restore, when to check whether the fight is over.
	wait time.Duration
	// lookup lists the fields whose other writer must be read from managedFields before
	// the plan is final (settle): changed again, or at the end of their backoff.
	lookup []fieldKey
}

// observe records that child, of owner, differs from what Mooring applied in fields (at
// the child's resourceVersion rv) and plans what to do: the plan is final unless it has
// fields to look up.
func (c *contests) observe(owner types.NamespacedName, gvk schema.GroupVersionKind, child string, fields [][]string, rv string) plan {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	entries := c.byOwner[owner]
	if entries == nil {
		entries = map[fieldKey]*contest{}
		c.byOwner[owner] = entries
	}
	p := plan{owner: owner, gvk: gvk, child: child, paths: map[fieldKey][]string{}}
	for _, path := range fields {
		k := fieldKey{gvk, child, formatPath(path)}
		p.fields = append(p.fields, k)
		p.paths[k] = path
		e := entries[k]
		if e != nil && !e.contested && now.Sub(e.lastSeen) >= c.backoff.Quiet {
			e = nil // a change long after the last one starts afresh
		}
		switch {
		case e == nil:
			// A first change: put it back at once, as any hand edit.
			entries[k] = &contest{first: now, changes: 1, lastRV: rv, lastSeen: now}
			p.restore = true
			continue
		case rv != e.lastRV:
			e.changes++
			e.lastRV = rv
		}
		e.lastSeen = now
		if !e.contested || now.Sub(e.lastRestore) >= e.delay {
			p.lookup = append(p.lookup, k)
			continue
		}
		p.wait = minWait(p.wait, e.lastRestore.Add(e.delay).Sub(now))
	}
	return p
}

// settle makes p final once the other writers of p.lookup are known (managers holds, by
// field, the other manager that owns it, the zero fieldWriter when nobody owns it any
// more; a field only Mooring owns is absent), records a restore if there is one, and
// returns the reports to make as events: one per field whose backoff window starts.
func (c *contests) settle(p plan, managers map[fieldKey]fieldWriter) (plan, []string) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	entries := c.byOwner[p.owner]
	due := map[fieldKey]bool{}
	var reports []string
	for _, k := range p.lookup {
		e := entries[k]
		if e == nil {
			continue
		}
		m, other := managers[k]
		if !other {
			// Only Mooring owns it: nobody else wrote it (Mooring's own value did not
			// stick), so no fight and no backoff.
			delete(entries, k)
			p.restore = true
			continue
		}
		e.writer = m
		if !e.contested {
			e.contested, e.delay = true, c.backoff.Initial
			if now.Sub(e.lastRestore) < e.delay {
				// Contested within its first window: say so now, restore at its end.
				e.message = c.describe(p.owner.Namespace, k, e, now)
				reports = append(reports, e.message)
				p.wait = minWait(p.wait, e.lastRestore.Add(e.delay).Sub(now))
				continue
			}
		}
		due[k] = true
		p.restore = true
	}
	if !p.restore {
		return p, reports
	}
	// The child is applied now: every tracked field of it starts a new wait, twice as long
	// for each whose backoff ended, which is reported.
	p.wait = 0
	for _, k := range p.fields {
		e := entries[k]
		if e == nil {
			continue
		}
		e.lastRestore = now
		if !e.contested {
			continue
		}
		if due[k] {
			e.delay = min(2*e.delay, c.backoff.Max)
			e.message = c.describe(p.owner.Namespace, k, e, now)
			reports = append(reports, e.message)
		}
		// Look again when the fight would count as over.
		p.wait = max(p.wait, c.window(e))
	}
	return p, reports
}

// window is how long a contested field must keep Mooring's value for the fight to be over.
func (c *contests) window(e *contest) time.Duration { return max(c.backoff.Quiet, e.delay) }

// calm notes that child, of owner, matches what Mooring applies: its fights that have been
// quiet for a whole window are over. It returns when to look again for the contested
// fields that are not, zero when none is left.
func (c *contests) calm(owner types.NamespacedName, gvk schema.GroupVersionKind, child string) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	entries := c.byOwner[owner]
	if len(entries) == 0 {
		return 0
	}
	now := c.now()
	var wait time.Duration
	for k, e := range entries {
		if k.gvk != gvk || k.child != child {
			continue
		}
		window := c.backoff.Quiet
		if e.contested {
			window = c.window(e)
		}
		left := e.lastSeen.Add(window).Sub(now)
		switch {
		case left <= 0:
			delete(entries, k)
		case e.contested:
			// Nothing else may bring the owner back: look again then, to clear the condition.
			wait = minWait(wait, left)
		}
	}
	if len(entries) == 0 {
		delete(c.byOwner, owner)
	}
	return wait
}

// forget drops what is known of owner's children, once owner is gone.
func (c *contests) forget(owner types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byOwner, owner)
}

func minWait(a, b time.Duration) time.Duration {
	if b < 0 {
		b = 0
	}
	if a == 0 || b < a {
		return b
	}
	return a
}

// describe is the report of a contested field of a child in namespace: the event's note
// and the condition's message.
func (c *contests) describe(namespace string, k fieldKey, e *contest, now time.Time) string {
	return fmt.Sprintf("%s %s/%s field %s is also written by %s (changed %s in %s); Mooring restores it with backoff, at most every %s now.",
		k.gvk.Kind, namespace, k.child, k.field, e.writer, times(e.changes), roundDuration(now.Sub(e.first)), roundDuration(e.delay))
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

// roundDuration keeps messages short: whole seconds, whole minutes from an hour on.
func roundDuration(d time.Duration) string {
	if d < time.Hour {
		return d.Round(time.Second).String()
	}
	return d.Round(time.Minute).String()
}

// fieldWriter is a field manager, and the subresource it writes through ("scale" for
// kubectl scale and the HorizontalPodAutoscaler).
type fieldWriter struct{ manager, subresource string }

func (w fieldWriter) String() string {
	switch {
	case w.manager == "":
		return "another writer"
	case w.subresource != "":
		return fmt.Sprintf("field manager %q through the %s subresource", w.manager, w.subresource)
	}
	return fmt.Sprintf("field manager %q", w.manager)
}

// formatPath prints a field path as users read it: spec.replicas, or
// metadata.labels[app.kubernetes.io/name] for keys with dots or slashes.
func formatPath(path []string) string {
	var b strings.Builder
	for i, p := range path {
		switch {
		case strings.ContainsAny(p, "./[]"):
			b.WriteString("[" + p + "]")
		case i > 0:
			b.WriteString("." + p)
		default:
			b.WriteString(p)
		}
	}
	return b.String()
}

// condition is the message of owner's Contested condition, "" when none of its children's
// fields is contested.
func (c *contests) condition(owner types.NamespacedName) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var msgs []string
	for _, e := range c.byOwner[owner] {
		if e.contested && e.message != "" {
			msgs = append(msgs, e.message)
		}
	}
	sort.Strings(msgs)
	return strings.Join(msgs, " ")
}
