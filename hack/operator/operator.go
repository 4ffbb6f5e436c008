// Package main is a small controller-runtime operator, used by versa's e2e tests as a judge
// nobody here wrote the framework of: a Parent (ops.example.com/v1) asks for spec.children
// Children; the reconciler creates them with controller references (blockOwnerDeletion), deletes
// those beyond the count, and writes status.ready and status.observedGeneration through the
// status subresource. It runs with the manager's defaults — caches fed by list and watch,
// leader election on a coordination.k8s.io/v1 Lease when asked — as any kubebuilder operator.
package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

var (
	parentGVK = schema.GroupVersionKind{Group: "ops.example.com", Version: "v1", Kind: "Parent"}
	childGVK  = schema.GroupVersionKind{Group: "ops.example.com", Version: "v1", Kind: "Child"}
)

func newObject(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

func newList(gvk schema.GroupVersionKind) *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	return l
}

// Reconciler makes a Parent's Children match its spec.
type Reconciler struct {
	client.Client
	// Reconciled, when set, is told of every reconciled Parent and its ready count.
	Reconciled func(key string, ready int64)
}

// Reconcile is controller-runtime's entry point.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	parent := newObject(parentGVK)
	if err := r.Get(ctx, req.NamespacedName, parent); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if parent.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, nil
	}
	want, _, _ := unstructured.NestedInt64(parent.Object, "spec", "children")
	children := newList(childGVK)
	if err := r.List(ctx, children, client.InNamespace(req.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	owned := map[string]bool{}
	for _, c := range children.Items {
		for _, ref := range c.GetOwnerReferences() {
			if ref.UID == parent.GetUID() {
				owned[c.GetName()] = true
			}
		}
	}
	wanted := map[string]bool{}
	for i := int64(0); i < want; i++ {
		name := fmt.Sprintf("%s-%d", parent.GetName(), i)
		wanted[name] = true
		if owned[name] {
			continue
		}
		child := newObject(childGVK)
		child.SetName(name)
		child.SetNamespace(req.Namespace)
		_ = unstructured.SetNestedField(child.Object, i, "spec", "index")
		if err := controllerutil.SetControllerReference(parent, child, r.Scheme()); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Create(ctx, child); err != nil && !apierrors.IsAlreadyExists(err) {
			return ctrl.Result{}, err
		}
	}
	extra := []string{}
	for name := range owned {
		if !wanted[name] {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	for _, name := range extra {
		child := newObject(childGVK)
		child.SetName(name)
		child.SetNamespace(req.Namespace)
		if err := r.Delete(ctx, child); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
	}
	ready := int64(len(wanted))
	_ = unstructured.SetNestedField(parent.Object, ready, "status", "ready")
	_ = unstructured.SetNestedField(parent.Object, parent.GetGeneration(), "status", "observedGeneration")
	if err := r.Status().Update(ctx, parent); err != nil {
		return ctrl.Result{}, err
	}
	if r.Reconciled != nil {
		r.Reconciled(req.String(), ready)
	}
	return ctrl.Result{}, nil
}

// SetupWithManager registers the reconciler: it is for Parents and owns Children.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(newObject(parentGVK)).
		Owns(newObject(childGVK)).
		Named(strings.ToLower(parentGVK.Kind)).
		Complete(r)
}
