package ui

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// objectPage shows one object: its row, spec and status, conditions, events, the
// children Mooring made (the plugin's status tree), their pods, the last lines of one
// pod's log (?pod=NAME, the first pod by default) and the object as YAML. Every read is
// the caller's; a read the caller may not make shows why in its own part of the page.
func (u *UI) objectPage(c *gin.Context) {
	k, ok := u.kindOf(c)
	if !ok {
		return
	}
	ctx, cl := c.Request.Context(), caller(c)
	ns, name := c.Param("ns"), c.Param("name")
	obj, err := u.o.Resources.Get(ctx, cl, ns, k.Resource, name)
	if err != nil {
		u.fail(c, err)
		return
	}
	in := objectInput{Namespace: ns, Kind: k, Object: obj}
	in.Events, in.EventsErr = u.o.Objects.Events(ctx, cl, ns, k.Kind, name)
	in.Tree, in.Hidden, in.TreeErr = u.o.Objects.Tree(ctx, cl, ns, k.Kind, name)
	// Only a pod of this object's tree is read: ?pod= cannot name any pod of the
	// namespace (RBAC would decide anyway; the page is about this object).
	if in.Pod = pickPod(podLines(in.Tree), c.Query("pod")); in.Pod != "" {
		in.Log, in.LogErr = u.o.Objects.Log(ctx, cl, ns, in.Pod, logLines)
	}
	describeErr := func(err error) string { return describe(ctx, err).Message }
	v := makeObjectView(in, u.o.Now(), describeErr)
	acc, err := u.o.Permissions.Access(ctx, cl, ns)
	if err == nil {
		v.CanPatch = acc.CanMooring("patch", k.Resource)
		v.CanUpdate = acc.CanMooring("update", k.Resource)
		v.CanDelete = acc.CanMooring("delete", k.Resource)
	}
	u.render(c, http.StatusOK, "object", page{Title: k.Kind + " " + name, Data: v})
}
