package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubebus/kubebus/test/harness"
)

var (
	widgetsGVR    = schema.GroupVersionResource{Group: "bench.example.com", Version: "v1", Resource: "widgets"}
	configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// widgetFields are the string fields of a Widget's spec, and the keys of
// the ConfigMaps' data it is compared with.
var widgetFields = []string{"image", "owner", "notes", "extra"}

// widgetsCRD is a namespaced CRD with a modest structural schema: a spec
// of a few strings (unknown fields are pruned, the default).
func widgetsCRD() *apiextensionsv1.CustomResourceDefinition {
	props := map[string]apiextensionsv1.JSONSchemaProps{}
	for _, f := range widgetFields {
		props[f] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: widgetsGVR.Resource + "." + widgetsGVR.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: widgetsGVR.Group,
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: widgetsGVR.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type:       "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Properties: props}},
				}},
			}},
		},
	}
}

// benchPayload is the ~1 KB both kinds carry: four 256-byte strings.
func benchPayload(i int) map[string]any {
	p := map[string]any{}
	for j, f := range widgetFields {
		head := fmt.Sprintf("%06d-%d-", i, j)
		p[f] = head + strings.Repeat("x", 256-len(head))
	}
	return p
}

// benchWidget is Widget i with the payload in its spec.
func benchWidget(i int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": widgetsGVR.GroupVersion().String(), "kind": "Widget",
		"metadata": map[string]any{"name": fmt.Sprintf("cr-%06d", i)},
		"spec":     benchPayload(i),
	}}
}

// benchConfigMap is ConfigMap i with the same payload in its data.
func benchConfigMap(i int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": fmt.Sprintf("cm-%06d", i)},
		"data":     benchPayload(i),
	}}
}

// createKind is one of the two kinds the benchmark compares.
type createKind struct {
	gvr schema.GroupVersionResource
	obj func(i int) *unstructured.Unstructured
	// the results of every chunk of this kind in one iteration
	elapsed time.Duration
	lat     []time.Duration
}

// BenchmarkCustomResourceCreates: the create throughput of a custom
// resource against a ConfigMap of about the same JSON size, the way a
// client-go program sends them: one client (client-go defaults, no rate
// limit, one shared HTTP/2 connection) used by 32 goroutines. Both kinds
// go through the dynamic client, so the client's work and the wire (JSON)
// are the same and the difference is the server's: a Widget is decoded,
// pruned, defaulted and validated against its CRD's schema, a ConfigMap by
// the built-in code. Each iteration creates 2,000 of each in chunks of
// 1,000 in the order Widget, ConfigMap, ConfigMap, Widget (reversed on odd
// iterations), so a server that slows as it fills costs both the same.
// Reports creates/s and per-request latency p50/p99 of each kind, and the
// ratio of their rates.
func BenchmarkCustomResourceCreates(b *testing.B) {
	const clients, total = 32, 2000
	s := harness.StartServer(b, "")
	cfg := s.RESTConfig(b)
	cfg.QPS, cfg.Burst = -1, 0
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		b.Fatal(err)
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, hc)
	if err != nil {
		b.Fatal(err)
	}
	ext, err := apiextensions.NewForConfigAndClient(cfg, hc)
	if err != nil {
		b.Fatal(err)
	}
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	createWidgetsCRD(ctx, b, ext)

	// Warm both paths (the connection, the CRD's handler, the schema) and
	// note the objects' sizes.
	const warm = "bench-crd-warm"
	createNamespace(ctx, b, cs, warm)
	var stored *unstructured.Unstructured
	harness.Eventually(b, 30*time.Second, func() error {
		stored, err = dyn.Resource(widgetsGVR).Namespace(warm).Create(ctx, benchWidget(total), metav1.CreateOptions{})
		return err
	})
	storedCM, err := dyn.Resource(configMapsGVR).Namespace(warm).Create(ctx, benchConfigMap(total), metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("JSON sent: Widget %d bytes, ConfigMap %d bytes; as the server returns them: Widget %d bytes, ConfigMap %d bytes",
		jsonSize(b, benchWidget(0)), jsonSize(b, benchConfigMap(0)), jsonSize(b, stored), jsonSize(b, storedCM))
	widgets := &createKind{gvr: widgetsGVR, obj: benchWidget}
	configMaps := &createKind{gvr: configMapsGVR, obj: benchConfigMap}
	for _, k := range []*createKind{widgets, configMaps} {
		createAll(ctx, b, dyn.Resource(k.gvr).Namespace(warm), total+1, 128, clients, k.obj)
	}

	b.ResetTimer()
	var crRates, crP50s, crP99s, cmRates, cmP50s, cmP99s, ratios []float64
	for iter := 0; iter < b.N; iter++ {
		ns := fmt.Sprintf("bench-crd-%d", iter)
		createNamespace(ctx, b, cs, ns)
		order := []*createKind{widgets, configMaps, configMaps, widgets}
		if iter%2 == 1 {
			order = []*createKind{configMaps, widgets, widgets, configMaps}
		}
		for _, k := range order {
			k.elapsed, k.lat = 0, nil
		}
		next := map[*createKind]int{}
		for _, k := range order {
			elapsed, lat := createAll(ctx, b, dyn.Resource(k.gvr).Namespace(ns), next[k], total/2, clients, k.obj)
			next[k] += total / 2
			k.elapsed += elapsed
			k.lat = append(k.lat, lat...)
		}
		crRate, crP50, crP99 := rateP50P99(widgets)
		cmRate, cmP50, cmP99 := rateP50P99(configMaps)
		crRates, crP50s, crP99s = append(crRates, crRate), append(crP50s, crP50), append(crP99s, crP99)
		cmRates, cmP50s, cmP99s = append(cmRates, cmRate), append(cmP50s, cmP50), append(cmP99s, cmP99)
		ratios = append(ratios, crRate/cmRate)
	}
	b.StopTimer()
	b.ReportMetric(median(crRates), "cr-creates/s")
	b.ReportMetric(median(crP50s), "cr-p50-ms")
	b.ReportMetric(median(crP99s), "cr-p99-ms")
	b.ReportMetric(median(cmRates), "cm-creates/s")
	b.ReportMetric(median(cmP50s), "cm-p50-ms")
	b.ReportMetric(median(cmP99s), "cm-p99-ms")
	b.ReportMetric(median(ratios), "cr/cm-rate")
}

// createWidgetsCRD creates the Widget CRD and waits until it is established.
func createWidgetsCRD(ctx context.Context, b *testing.B, ext apiextensions.Interface) {
	b.Helper()
	crds := ext.ApiextensionsV1().CustomResourceDefinitions()
	crd, err := crds.Create(ctx, widgetsCRD(), metav1.CreateOptions{})
	if err != nil {
		b.Fatalf("creating the Widget CRD: %v", err)
	}
	harness.Eventually(b, 60*time.Second, func() error {
		got, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("getting CRD %s: %w", crd.Name, err)
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("CRD %s not established: %+v", crd.Name, got.Status.Conditions)
	})
}

// createAll creates objects first..first+n-1 through ri from clients
// goroutines and returns the time it took and each create's latency.
func createAll(ctx context.Context, b *testing.B, ri dynamic.ResourceInterface, first, n, clients int, obj func(int) *unstructured.Unstructured) (time.Duration, []time.Duration) {
	b.Helper()
	lat := make([]time.Duration, n)
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				o := obj(first + i)
				t0 := time.Now()
				_, err := ri.Create(ctx, o, metav1.CreateOptions{})
				lat[i] = time.Since(t0)
				if err != nil {
					failed.Add(1)
					b.Errorf("create %s: %v", o.GetName(), err)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if failed.Load() > 0 {
		b.Fatalf("%d creates failed", failed.Load())
	}
	return elapsed, lat
}

// rateP50P99 are a kind's creates/s over all its chunks and the p50 and
// p99 of its creates' latencies in milliseconds.
func rateP50P99(k *createKind) (float64, float64, float64) {
	lat := append([]time.Duration(nil), k.lat...)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return float64(len(lat)) / k.elapsed.Seconds(), ms(lat[len(lat)/2]), ms(lat[len(lat)*99/100])
}

func jsonSize(b *testing.B, u *unstructured.Unstructured) int {
	b.Helper()
	j, err := json.Marshal(u.Object)
	if err != nil {
		b.Fatal(err)
	}
	return len(j)
}
