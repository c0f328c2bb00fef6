package ui

import (
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// liveHeader marks the status polls of static/ui.js: they get the live part of the
// page only.
const liveHeader = "X-Mooring-Live"

func nsURL(ns string) string { return Prefix + "/ns/" + url.PathEscape(ns) }

// kindOf is the kind of the path, or a 404 page.
func (u *UI) kindOf(c *gin.Context) (*kindSpec, bool) {
	k, ok := kindSpecs[c.Param("kind")]
	if !ok {
		u.render(c, http.StatusNotFound, "error", page{Title: "Not found", Error: "There is no such kind here."})
	}
	return k, ok
}

// namespaceView reads every kind of ns as the caller: one list per kind, nothing per
// object.
func (u *UI) namespaceView(c *gin.Context, ns string) (nsView, error) {
	ctx, cl := c.Request.Context(), caller(c)
	acc, err := u.o.Permissions.Access(ctx, cl, ns)
	if err != nil {
		return nsView{}, err
	}
	now := u.o.Now()
	v := nsView{Namespace: ns}
	for _, kind := range kindOrder {
		k := kindSpecs[kind]
		s := section{kindSpec: k, CanCreate: acc.CanMooring("create", kind), CanUpdate: acc.CanMooring("update", kind),
			CanPatch: acc.CanMooring("patch", kind), CanDelete: acc.CanMooring("delete", kind)}
		l, err := u.o.Resources.List(ctx, cl, ns, kind)
		if err != nil {
			s.Error = describe(ctx, err).Message
		} else {
			for i := range l.Items {
				s.Rows = append(s.Rows, makeRow(k, &l.Items[i], now))
			}
		}
		v.Sections = append(v.Sections, s)
	}
	return v, nil
}

// namespacePage shows every App, cache, database and backup of a namespace. A poll
// (liveHeader) gets only the live part, or 304 when it has not changed.
func (u *UI) namespacePage(c *gin.Context) {
	ns := c.Param("ns")
	v, err := u.namespaceView(c, ns)
	if err != nil {
		u.fail(c, err)
		return
	}
	p := page{Title: ns, Notice: noticeOf(c), Poll: u.o.PollInterval, Data: v}
	if c.GetHeader(liveHeader) == "" {
		u.render(c, http.StatusOK, "namespace", p)
		return
	}
	body, ok := u.build(c, "namespace", "live", p)
	if !ok {
		return
	}
	// The ETag is a hash of what is shown, which changes with any object's
	// resourceVersion, condition or event: an unchanged namespace costs the browser a 304.
	etag := version([]string{string(body)})
	c.Header("ETag", etag)
	if c.GetHeader("If-None-Match") == etag {
		c.Status(http.StatusNotModified)
		return
	}
	c.Data(http.StatusOK, "text/html; charset=utf-8", body)
}

// formData is the create and edit pages.
type formData struct {
	Namespace, Name string
	Kind            *kindSpec
	Fields          []input
	Editing         bool
	// Other lists errors no field shows.
	Other []string
}

func (u *UI) newPage(c *gin.Context) {
	k, ok := u.kindOf(c)
	if !ok {
		return
	}
	u.render(c, http.StatusOK, "form", page{Title: "New " + k.Kind, Data: formData{Namespace: c.Param("ns"), Kind: k, Fields: k.formFields(nil, false)}})
}

func (u *UI) create(c *gin.Context) {
	k, ok := u.kindOf(c)
	if !ok {
		return
	}
	ns := c.Param("ns")
	fields := k.formFields(nil, false)
	obj := map[string]any{}
	bad := apply(obj, fields, c.PostForm)
	for i := range fields {
		fields[i].Value = c.PostForm(fields[i].Name)
	}
	if len(bad) == 0 {
		_, err := u.o.Resources.Create(c.Request.Context(), caller(c), ns, k.Resource, obj)
		if err == nil {
			c.Redirect(http.StatusSeeOther, nsURL(ns)+"?notice=created")
			return
		}
		u.formError(c, k, ns, "", fields, false, err)
		return
	}
	u.renderForm(c, http.StatusUnprocessableEntity, k, ns, "", fields, false, "Some fields are not valid.", bad)
}

func (u *UI) formError(c *gin.Context, k *kindSpec, ns, name string, fields []input, editing bool, err error) {
	p := describe(c.Request.Context(), err)
	u.renderForm(c, p.Status, k, ns, name, fields, editing, p.Message, p.Fields)
}

func (u *UI) renderForm(c *gin.Context, status int, k *kindSpec, ns, name string, fields []input, editing bool, msg string, errs map[string]string) {
	other := fieldErrors(fields, errs)
	title := "New " + k.Kind
	if editing {
		title = "Edit " + k.Kind + " " + name
	}
	u.render(c, status, "form", page{Title: title, Error: msg,
		Data: formData{Namespace: ns, Name: name, Kind: k, Fields: fields, Editing: editing, Other: other}})
}

func (u *UI) editable(c *gin.Context) (*kindSpec, bool) {
	k, ok := u.kindOf(c)
	if ok && !k.Editable {
		u.render(c, http.StatusNotFound, "error", page{Title: "Not found", Error: "This kind has no edit form."})
		return nil, false
	}
	return k, ok
}

func (u *UI) editPage(c *gin.Context) {
	k, ok := u.editable(c)
	if !ok {
		return
	}
	ns, name := c.Param("ns"), c.Param("name")
	obj, err := u.o.Resources.Get(c.Request.Context(), caller(c), ns, k.Resource, name)
	if err != nil {
		u.fail(c, err)
		return
	}
	u.render(c, http.StatusOK, "form", page{Title: "Edit " + k.Kind + " " + name,
		Data: formData{Namespace: ns, Name: name, Kind: k, Fields: k.formFields(obj.Object, true), Editing: true}})
}

// update reads the object, sets the form's fields and replaces it: the resourceVersion
// read makes a concurrent change a conflict rather than a silent overwrite.
func (u *UI) update(c *gin.Context) {
	k, ok := u.editable(c)
	if !ok {
		return
	}
	ns, name := c.Param("ns"), c.Param("name")
	ctx, cl := c.Request.Context(), caller(c)
	fields := k.formFields(nil, true)
	for i := range fields {
		fields[i].Value = c.PostForm(fields[i].Name)
	}
	obj, err := u.o.Resources.Get(ctx, cl, ns, k.Resource, name)
	if err != nil {
		u.formError(c, k, ns, name, fields, true, err)
		return
	}
	if bad := apply(obj.Object, fields, c.PostForm); len(bad) > 0 {
		u.renderForm(c, http.StatusUnprocessableEntity, k, ns, name, fields, true, "Some fields are not valid.", bad)
		return
	}
	delete(obj.Object, "status")
	if _, err := u.o.Resources.Update(ctx, cl, ns, k.Resource, name, obj.Object); err != nil {
		u.formError(c, k, ns, name, fields, true, err)
		return
	}
	c.Redirect(http.StatusSeeOther, nsURL(ns)+"?notice=updated")
}

// patch sends a JSON merge patch and returns to the namespace page with notice.
func (u *UI) patch(c *gin.Context, k *kindSpec, body map[string]any, notice string) {
	data, err := json.Marshal(body)
	if err != nil {
		u.fail(c, err)
		return
	}
	ns := c.Param("ns")
	if _, err := u.o.Resources.Patch(c.Request.Context(), caller(c), ns, k.Resource, c.Param("name"), data); err != nil {
		u.fail(c, err)
		return
	}
	c.Redirect(http.StatusSeeOther, nsURL(ns)+"?notice="+notice)
}

func (u *UI) scale(c *gin.Context) {
	k, ok := u.kindOf(c)
	if !ok {
		return
	}
	if k.ReplicasPath == "" {
		u.render(c, http.StatusNotFound, "error", page{Title: "Not found", Error: k.Kind + " does not scale."})
		return
	}
	obj := map[string]any{}
	f := []input{{Name: "replicas", Path: k.ReplicasPath, Type: "number"}}
	if bad := apply(obj, f, c.PostForm); len(bad) > 0 || c.PostForm("replicas") == "" {
		u.render(c, http.StatusUnprocessableEntity, "error", page{Title: "Not scaled", Error: "replicas must be a whole number."})
		return
	}
	u.patch(c, k, obj, "scaled")
}

// pause sets or removes the engine's paused annotation.
func (u *UI) pause(on bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		k, ok := u.kindOf(c)
		if !ok {
			return
		}
		var value any // null removes the annotation in a merge patch
		notice := "resumed"
		if on {
			value, notice = "true", "paused"
		}
		u.patch(c, k, map[string]any{"metadata": map[string]any{"annotations": map[string]any{mooringv1.PausedAnnotation: value}}}, notice)
	}
}

type deleteData struct {
	Namespace, Name string
	Kind            *kindSpec
}

// deletePage asks for confirmation, naming the object.
func (u *UI) deletePage(c *gin.Context) {
	k, ok := u.kindOf(c)
	if !ok {
		return
	}
	d := deleteData{Namespace: c.Param("ns"), Name: c.Param("name"), Kind: k}
	u.render(c, http.StatusOK, "delete", page{Title: "Delete " + k.Kind + " " + d.Name, Data: d})
}

func (u *UI) remove(c *gin.Context) {
	k, ok := u.kindOf(c)
	if !ok {
		return
	}
	ns := c.Param("ns")
	if err := u.o.Resources.Delete(c.Request.Context(), caller(c), ns, k.Resource, c.Param("name")); err != nil {
		u.fail(c, err)
		return
	}
	c.Redirect(http.StatusSeeOther, nsURL(ns)+"?notice=deleted")
}

func (u *UI) runBackup(c *gin.Context) {
	if c.Param("kind") != mooringv1.ResourceBackups {
		u.render(c, http.StatusNotFound, "error", page{Title: "Not found", Error: "Only backups run on demand."})
		return
	}
	ns := c.Param("ns")
	if _, err := u.o.Resources.RunBackup(c.Request.Context(), caller(c), ns, c.Param("name")); err != nil {
		u.fail(c, err)
		return
	}
	c.Redirect(http.StatusSeeOther, nsURL(ns)+"?notice=backup")
}
