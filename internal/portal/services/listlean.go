package services

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/mooringhq/mooring/internal/portal/cluster"
)

// listLean lists resource in namespace as id and drops every item's managedFields.
// The list is parsed once: the dynamic client's decoder reads the whole body four
// times (its kind, the raw items, the whole list as a map, then each item), which was
// most of the portal's CPU per list request in hack/portalbench.
func listLean(ctx context.Context, imp *cluster.Impersonator, id cluster.Identity, gv schema.GroupVersion, namespace, resource string, page Page) (*unstructured.UnstructuredList, error) {
	raw, err := listRaw(ctx, imp, id, gv, namespace, resource, page)
	if err != nil {
		return nil, err
	}
	return decodeLeanList(raw)
}

// listLeanJSON is listLean's list in JSON, made from the API server's bytes without
// decoding them (leanList) unless an item needs the list's apiVersion and kind.
func listLeanJSON(ctx context.Context, imp *cluster.Impersonator, id cluster.Identity, gv schema.GroupVersion, namespace, resource string, page Page) ([]byte, error) {
	raw, err := listRaw(ctx, imp, id, gv, namespace, resource, page)
	if err != nil {
		return nil, err
	}
	out, err := leanList(raw)
	if errors.Is(err, errNotLean) {
		l, err := decodeLeanList(raw)
		if err != nil {
			return nil, err
		}
		return json.Marshal(l)
	}
	return out, err
}

// listRaw is the API server's answer to a list of resource in namespace as id.
func listRaw(ctx context.Context, imp *cluster.Impersonator, id cluster.Identity, gv schema.GroupVersion, namespace, resource string, page Page) ([]byte, error) {
	c, err := imp.REST(id, gv)
	if err != nil {
		return nil, err
	}
	req := c.Get().Namespace(namespace).Resource(resource)
	if page.Limit > 0 {
		req = req.Param("limit", strconv.FormatInt(page.Limit, 10))
	}
	if page.Continue != "" {
		req = req.Param("continue", page.Continue)
	}
	raw, err := cluster.DoRaw(ctx, req)
	return raw, pageError(page, err)
}

// getLeanJSON reads the object name as id and returns the API server's JSON of it
// without its managedFields.
func getLeanJSON(ctx context.Context, imp *cluster.Impersonator, id cluster.Identity, gv schema.GroupVersion, namespace, resource, name string) ([]byte, error) {
	c, err := imp.REST(id, gv)
	if err != nil {
		return nil, err
	}
	raw, err := cluster.DoRaw(ctx, c.Get().Namespace(namespace).Resource(resource).Name(name))
	if err != nil {
		return nil, err
	}
	return leanObject(raw)
}

// decodeLeanList turns a list as the API server sends it into an UnstructuredList
// without managedFields, setting an item's apiVersion and kind from the list's where
// the item has none (as the dynamic client does).
func decodeLeanList(raw []byte) (*unstructured.UnstructuredList, error) {
	var obj map[string]any
	if err := utiljson.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("decode list: %w", err)
	}
	items, _ := obj["items"].([]any)
	delete(obj, "items")
	l := &unstructured.UnstructuredList{Object: obj, Items: make([]unstructured.Unstructured, 0, len(items))}
	apiVersion, itemKind := l.GetAPIVersion(), strings.TrimSuffix(l.GetKind(), "List")
	for i, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("decode list: item %d is a %T, not an object", i, it)
		}
		u := unstructured.Unstructured{Object: m}
		if u.GetKind() == "" && u.GetAPIVersion() == "" {
			u.SetKind(itemKind)
			u.SetAPIVersion(apiVersion)
		}
		u.SetManagedFields(nil)
		l.Items = append(l.Items, u)
	}
	return l, nil
}
