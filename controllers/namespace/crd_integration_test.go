package namespace

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/test/harness"
)

var (
	crdsGVR    = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")
	widgetsGVR = schema.GroupVersionResource{Group: "gc.example.com", Version: "v1", Resource: "widgets"}
)

// widgetsCRD is a namespaced CRD of Widgets, which keep any field.
func widgetsCRD() *apiextensionsv1.CustomResourceDefinition {
	keep := true
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: widgetsGVR.Resource + "." + widgetsGVR.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: widgetsGVR.Group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &keep}}}},
		},
	}
}

// crdEnv is a server whose own controller-manager runs, as deployed: the
// test looks at what it does to custom objects.
type crdEnv struct {
	cs      kubernetes.Interface
	dyn     dynamic.Interface
	ctx     context.Context
	widgets dynamic.NamespaceableResourceInterface
}

func (e *crdEnv) createWidget(t *testing.T, ns, name string, owners ...metav1.OwnerReference) *unstructured.Unstructured {
	t.Helper()
	w := &unstructured.Unstructured{}
	w.SetAPIVersion(widgetsGVR.GroupVersion().String())
	w.SetKind("Widget")
	w.SetName(name)
	w.SetOwnerReferences(owners)
	out, err := e.widgets.Namespace(ns).Create(e.ctx, w, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating widget %s/%s: %v", ns, name, err)
	}
	return out
}

// widgetGone waits until the widget is gone.
func (e *crdEnv) widgetGone(t *testing.T, ns, name string) {
	t.Helper()
	harness.Eventually(t, 30*time.Second, func() error {
		_, err := e.widgets.Namespace(ns).Get(e.ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("widget %s/%s is still there (%v)", ns, name, err)
	})
}

func (e *crdEnv) createNamespace(t *testing.T, name string) {
	t.Helper()
	if _, err := e.cs.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createCRD creates the widgets' CRD and waits until it is Established.
func (e *crdEnv) createCRD(t *testing.T) {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(widgetsCRD())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.dyn.Resource(crdsGVR).Create(e.ctx, &unstructured.Unstructured{Object: u}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the CRD: %v", err)
	}
	harness.Eventually(t, 30*time.Second, func() error {
		got, err := e.dyn.Resource(crdsGVR).Get(e.ctx, widgetsCRD().Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var c apiextensionsv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(got.Object, &c); err != nil {
			return err
		}
		for _, cond := range c.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("the CRD is not Established: %+v", c.Status.Conditions)
	})
}

// TestIntegrationCustomResources: the controller-manager's garbage
// collector and namespace controller act on the objects of a CRD created
// while they run.
func TestIntegrationCustomResources(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", "--disable-scheduler", harness.NoServiceAccounts)
	dyn, err := dynamic.NewForConfig(s.RESTConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	e := &crdEnv{cs: s.Clientset(t), dyn: dyn, ctx: context.Background(), widgets: dyn.Resource(widgetsGVR)}
	e.createCRD(t)

	// The garbage collector first: once it collects a widget, the
	// controller-manager has seen the CRD (the namespace controller
	// learns of it in the same event).
	t.Run("a widget whose owner is deleted is collected", func(t *testing.T) {
		e.createNamespace(t, "crd-gc")
		owner, err := e.cs.CoreV1().ConfigMaps("crd-gc").Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		e.createWidget(t, "crd-gc", "owned", metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID})
		if err := e.cs.CoreV1().ConfigMaps("crd-gc").Delete(e.ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		e.widgetGone(t, "crd-gc", "owned")
	})

	t.Run("the CRD deleted and created again", func(t *testing.T) {
		if err := e.dyn.Resource(crdsGVR).Delete(e.ctx, widgetsCRD().Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		harness.Eventually(t, 30*time.Second, func() error {
			_, err := e.dyn.Resource(crdsGVR).Get(e.ctx, widgetsCRD().Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("the CRD is still there (%v)", err)
		})
		e.createCRD(t)
		owner, err := e.cs.CoreV1().ConfigMaps("crd-gc").Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner-2"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		e.createWidget(t, "crd-gc", "owned-2", metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID})
		if err := e.cs.CoreV1().ConfigMaps("crd-gc").Delete(e.ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		e.widgetGone(t, "crd-gc", "owned-2")
	})

	t.Run("a configmap whose widget owner is deleted is collected", func(t *testing.T) {
		parent := e.createWidget(t, "crd-gc", "parent")
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: widgetsGVR.GroupVersion().String(), Kind: "Widget", Name: parent.GetName(), UID: parent.GetUID()}}}}
		if _, err := e.cs.CoreV1().ConfigMaps("crd-gc").Create(e.ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		uid := parent.GetUID()
		if err := e.widgets.Namespace("crd-gc").Delete(e.ctx, parent.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
			t.Fatal(err)
		}
		harness.Eventually(t, 30*time.Second, func() error {
			_, err := e.cs.CoreV1().ConfigMaps("crd-gc").Get(e.ctx, "dependent", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("configmap dependent is still there (%v)", err)
		})
	})

	t.Run("deleting a namespace deletes its widgets", func(t *testing.T) {
		e.createNamespace(t, "crd-doomed")
		for i := range 3 {
			e.createWidget(t, "crd-doomed", fmt.Sprintf("w-%d", i))
		}
		// One held by a finalizer: the namespace waits for it.
		held := e.createWidget(t, "crd-doomed", "held")
		held.SetFinalizers([]string{"test.kubebus.io/hold"})
		if _, err := e.widgets.Namespace("crd-doomed").Update(e.ctx, held, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := e.cs.CoreV1().Namespaces().Delete(e.ctx, "crd-doomed", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		harness.Eventually(t, 30*time.Second, func() error {
			list, err := e.widgets.Namespace("crd-doomed").List(e.ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			if len(list.Items) != 1 || list.Items[0].GetName() != "held" || list.Items[0].GetDeletionTimestamp() == nil {
				return fmt.Errorf("want only widget held left, being deleted; have %d widgets", len(list.Items))
			}
			return nil
		})
		ns, err := e.cs.CoreV1().Namespaces().Get(e.ctx, "crd-doomed", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the namespace went while a widget remains: %v", err)
		}
		if ns.Status.Phase != corev1.NamespaceTerminating {
			t.Fatalf("phase %s, want Terminating", ns.Status.Phase)
		}
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		if _, err := e.widgets.Namespace("crd-doomed").Patch(e.ctx, "held", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		harness.Eventually(t, 30*time.Second, func() error {
			_, err := e.cs.CoreV1().Namespaces().Get(e.ctx, "crd-doomed", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("namespace crd-doomed is still there (%v)", err)
		})
		list, err := e.widgets.Namespace("crd-doomed").List(e.ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 0 {
			t.Fatalf("%d widgets are left in the deleted namespace", len(list.Items))
		}
	})
}
