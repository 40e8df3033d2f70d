// Command builtin-types prints, for every struct type reachable from the built-in kinds the project's emulators
// serve, how encoding/json writes each field when it is empty: "omit" (omitempty or omitzero drops an empty
// value), "pointer" (dropped when nil, kept when set, even to a zero value), or the JSON the field is written as
// when it is not set (a by-value field without omitempty: "", 0, false, null for a nil slice or map, {} ...).
// The definitions are named as the API server's OpenAPI names them (io.k8s.api.apps.v1.Deployment); each one's
// fields come in the order Go encodes them (the struct's order), which is the order of the API server's answers.
package main

import (
	"encoding/json"
	"os"
	"reflect"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func definition(t reflect.Type) string {
	path := t.PkgPath()
	domain, rest, _ := strings.Cut(path, "/")
	parts := strings.Split(domain, ".")
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, ".") + "." + strings.ReplaceAll(rest, "/", ".") + "." + t.Name()
}

var marshaler = reflect.TypeOf((*json.Marshaler)(nil)).Elem()

type field struct {
	name string
	rule string
}

func fields(t reflect.Type, out *[]field, todo *[]reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, options, _ := strings.Cut(tag, ",")
		if tag == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && name == "" {
			inner := f.Type
			if inner.Kind() == reflect.Pointer {
				inner = inner.Elem()
			}
			if inner.Kind() == reflect.Struct {
				fields(inner, out, todo)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		omit := strings.Contains(","+options+",", ",omitempty,") || strings.Contains(","+options+",", ",omitzero,")
		kind := f.Type.Kind()
		switch {
		case kind == reflect.Pointer:
			*out = append(*out, field{name, `"pointer"`})
		case omit && (kind != reflect.Struct || strings.Contains(","+options+",", ",omitzero,")):
			*out = append(*out, field{name, `"omit"`})
		default:
			zero, err := json.Marshal(reflect.Zero(f.Type).Interface())
			if err != nil {
				panic(err)
			}
			*out = append(*out, field{name, string(zero)})
		}
		for _, inner := range []reflect.Type{f.Type} {
			for inner.Kind() == reflect.Pointer || inner.Kind() == reflect.Slice || inner.Kind() == reflect.Map {
				inner = inner.Elem()
			}
			if inner.Kind() == reflect.Struct && inner.PkgPath() != "" && !inner.Implements(marshaler) &&
				!reflect.PointerTo(inner).Implements(marshaler) {
				*todo = append(*todo, inner)
			}
		}
	}
}

func main() {
	roots := []any{
		appsv1.Deployment{}, coordinationv1.Lease{}, corev1.ConfigMap{}, corev1.Event{}, corev1.Namespace{},
		corev1.Pod{}, corev1.PersistentVolumeClaim{}, corev1.ResourceQuota{}, corev1.LimitRange{},
		corev1.Secret{}, corev1.Service{}, corev1.ServiceAccount{}, eventsv1.Event{}, networkingv1.NetworkPolicy{},
		policyv1.PodDisruptionBudget{}, rbacv1.ClusterRole{}, rbacv1.ClusterRoleBinding{}, rbacv1.Role{},
		rbacv1.RoleBinding{}, apiextensionsv1.CustomResourceDefinition{},
	}
	seen := map[string][]field{}
	var todo []reflect.Type
	for _, root := range roots {
		todo = append(todo, reflect.TypeOf(root))
	}
	for len(todo) > 0 {
		t := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		name := definition(t)
		if _, done := seen[name]; done {
			continue
		}
		var out []field
		fields(t, &out, &todo)
		seen[name] = out
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	var text strings.Builder
	text.WriteString("{\n")
	for i, name := range names {
		key, _ := json.Marshal(name)
		text.WriteString(" " + string(key) + ": {")
		for j, f := range seen[name] {
			if j > 0 {
				text.WriteString(",")
			}
			fieldName, _ := json.Marshal(f.name)
			text.WriteString("\n  " + string(fieldName) + ": " + f.rule)
		}
		if len(seen[name]) > 0 {
			text.WriteString("\n ")
		}
		text.WriteString("}")
		if i < len(names)-1 {
			text.WriteString(",")
		}
		text.WriteString("\n")
	}
	text.WriteString("}\n")
	if _, err := os.Stdout.WriteString(text.String()); err != nil {
		panic(err)
	}
}
