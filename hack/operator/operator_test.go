// The operator's own test suite, as kubebuilder scaffolds it: controller-runtime's envtest
// installs the CRDs of crds/ and a manager runs the reconciler, and the tests drive it through
// a client. It runs unchanged against any cluster: envtest's UseExistingCluster path, pointed at
// KUBECONFIG (versa's e2e test points it at a standalone versa).
package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

var k8sClient client.Client

func TestMain(m *testing.M) {
	ctrl.SetLogger(logger())
	existing := true
	env := &envtest.Environment{
		UseExistingCluster:    &existing,
		CRDDirectoryPaths:     []string{filepath.Join(".", "crds")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		panic(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		panic(err)
	}
	if err := (&Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		if err := mgr.Start(ctx); err != nil {
			panic(err)
		}
	}()
	k8sClient, err = client.New(cfg, client.Options{})
	if err != nil {
		panic(err)
	}
	code := m.Run()
	cancel()
	_ = env.Stop()
	os.Exit(code)
}

// eventually retries check until it passes, for at most a minute.
func eventually(t *testing.T, what string, check func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if check() {
			return
		}
	}
	t.Fatalf("not within a minute: %s", what)
}

func children(t *testing.T, namespace string) []string {
	t.Helper()
	list := newList(childGVK)
	if err := k8sClient.List(context.Background(), list, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, c := range list.Items {
		if c.GetDeletionTimestamp() == nil {
			names = append(names, c.GetName())
		}
	}
	return names
}

func TestParentGetsItsChildrenAndStatus(t *testing.T) {
	ctx := context.Background()
	parent := newObject(parentGVK)
	parent.SetName("alpha")
	parent.SetNamespace("default")
	_ = unstructured.SetNestedField(parent.Object, int64(3), "spec", "children")
	if err := k8sClient.Create(ctx, parent); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "default", Name: "alpha"}
	eventually(t, "three children and status.ready 3", func() bool {
		got := newObject(parentGVK)
		if err := k8sClient.Get(ctx, key, got); err != nil {
			return false
		}
		ready, _, _ := unstructured.NestedInt64(got.Object, "status", "ready")
		observed, _, _ := unstructured.NestedInt64(got.Object, "status", "observedGeneration")
		return ready == 3 && observed == got.GetGeneration() && len(children(t, "default")) == 3
	})
	child := newObject(childGVK)
	if err := k8sClient.Get(ctx, types.NamespacedName{Namespace: "default", Name: "alpha-0"}, child); err != nil {
		t.Fatal(err)
	}
	refs := child.GetOwnerReferences()
	if len(refs) != 1 || refs[0].UID != parent.GetUID() || refs[0].Controller == nil || !*refs[0].Controller ||
		refs[0].BlockOwnerDeletion == nil || !*refs[0].BlockOwnerDeletion {
		t.Fatalf("alpha-0's owner references: %+v", refs)
	}

	// Fewer children: the operator deletes the extra ones.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"children":1}}`))
	if err := k8sClient.Patch(ctx, newObjectNamed(parentGVK, key), patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, "one child", func() bool {
		names := children(t, "default")
		return len(names) == 1 && names[0] == "alpha-0"
	})

	// A child deleted by hand comes back.
	if err := k8sClient.Delete(ctx, newObjectNamed(childGVK, types.NamespacedName{Namespace: "default", Name: "alpha-0"})); err != nil {
		t.Fatal(err)
	}
	eventually(t, "alpha-0 recreated", func() bool {
		got := newObject(childGVK)
		err := k8sClient.Get(ctx, types.NamespacedName{Namespace: "default", Name: "alpha-0"}, got)
		return err == nil && got.GetUID() != child.GetUID()
	})

	// The parent deleted: the garbage collector deletes what it owned.
	if err := k8sClient.Delete(ctx, newObjectNamed(parentGVK, key)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the parent and its children gone", func() bool {
		err := k8sClient.Get(ctx, key, newObject(parentGVK))
		return apierrors.IsNotFound(err) && len(children(t, "default")) == 0
	})
}

func TestAParentOfNoChildren(t *testing.T) {
	ctx := context.Background()
	parent := newObject(parentGVK)
	parent.SetName("empty")
	parent.SetNamespace("default")
	_ = unstructured.SetNestedField(parent.Object, int64(0), "spec", "children")
	if err := k8sClient.Create(ctx, parent); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "default", Name: "empty"}
	eventually(t, "status.ready 0", func() bool {
		got := newObject(parentGVK)
		if err := k8sClient.Get(ctx, key, got); err != nil {
			return false
		}
		ready, found, _ := unstructured.NestedInt64(got.Object, "status", "ready")
		return found && ready == 0
	})
	// Bad input is refused by the schema, as on kube.
	bad := newObject(parentGVK)
	bad.SetName("bad")
	bad.SetNamespace("default")
	_ = unstructured.SetNestedField(bad.Object, int64(21), "spec", "children")
	err := k8sClient.Create(ctx, bad)
	if !apierrors.IsInvalid(err) {
		t.Fatalf("a Parent of 21 children: %v", err)
	}
	if err := k8sClient.Delete(ctx, newObjectNamed(parentGVK, key)); err != nil {
		t.Fatal(err)
	}
}

func newObjectNamed(gvk schema.GroupVersionKind, key types.NamespacedName) *unstructured.Unstructured {
	u := newObject(gvk)
	u.SetName(key.Name)
	u.SetNamespace(key.Namespace)
	return u
}
