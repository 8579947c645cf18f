package apiserver

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebus/kubebus/apiserver/resource"
)

// subresourceInfo is how discovery describes each subresource.
var subresourceInfo = map[resource.Subresource]struct {
	verbs []string
	gvk   *schema.GroupVersionKind // nil: the parent's kind
}{
	resource.Status:   {verbs: []string{"get", "patch", "update"}},
	resource.Scale:    {verbs: []string{"get", "patch", "update"}, gvk: &schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}},
	resource.Binding:  {verbs: []string{"create"}, gvk: &schema.GroupVersionKind{Version: "v1", Kind: "Binding"}},
	resource.Log:      {verbs: []string{"get"}, gvk: &schema.GroupVersionKind{Version: "v1", Kind: "Pod"}},
	resource.Finalize: {verbs: []string{"update"}},
	resource.Eviction: {verbs: []string{"create"}, gvk: &schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}},
	resource.Token:    {verbs: []string{"create"}, gvk: &schema.GroupVersionKind{Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest"}},
	resource.Approval: {verbs: []string{"get", "patch", "update"}},
	// Connect subresources, as upstream describes them.
	resource.Exec:        {verbs: []string{"create", "get"}, gvk: &schema.GroupVersionKind{Version: "v1", Kind: "PodExecOptions"}},
	resource.Attach:      {verbs: []string{"create", "get"}, gvk: &schema.GroupVersionKind{Version: "v1", Kind: "PodAttachOptions"}},
	resource.PortForward: {verbs: []string{"create", "get"}, gvk: &schema.GroupVersionKind{Version: "v1", Kind: "PodPortForwardOptions"}},
}

// groupVersions returns the served group versions, core first, then by group name.
func (s *Server) groupVersions() []schema.GroupVersion {
	seen := map[schema.GroupVersion]bool{}
	var gvs []schema.GroupVersion
	for _, res := range s.table.all() {
		gv := res.GroupVersion()
		if !seen[gv] {
			seen[gv] = true
			gvs = append(gvs, gv)
		}
	}
	sort.SliceStable(gvs, func(i, j int) bool {
		if (gvs[i].Group == "") != (gvs[j].Group == "") {
			return gvs[i].Group == ""
		}
		return gvs[i].Group < gvs[j].Group
	})
	return gvs
}

// serveVersion answers /version as upstream: indented JSON whatever the
// Accept header says.
func (s *Server) serveVersion(w http.ResponseWriter, r *http.Request) {
	writeOut(w, output{pretty: true, gzip: acceptsGzip(r)}, http.StatusOK, Version)
}

// serveDiscovery writes a discovery document in the negotiated encoding.
func (s *Server) serveDiscovery(w http.ResponseWriter, r *http.Request, v any) {
	if err := writeNegotiated(w, r, http.StatusOK, v); err != nil {
		s.writeError(w, r, err)
	}
}

func (s *Server) serveAPIVersions(w http.ResponseWriter, r *http.Request) {
	s.serveDiscovery(w, r, &metav1.APIVersions{
		TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
		Versions: []string{"v1"},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
			{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host},
		},
	})
}

func (s *Server) apiGroup(group string) (metav1.APIGroup, bool) {
	g := metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: group}
	for _, gv := range s.groupVersions() {
		if gv.Group == group {
			v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
			g.Versions = append(g.Versions, v)
			if g.PreferredVersion.Version == "" {
				g.PreferredVersion = v
			}
		}
	}
	return g, len(g.Versions) > 0
}

func (s *Server) serveAPIGroupList(w http.ResponseWriter, r *http.Request) {
	list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	seen := map[string]bool{}
	for _, gv := range s.groupVersions() {
		if gv.Group == "" || seen[gv.Group] {
			continue
		}
		seen[gv.Group] = true
		g, _ := s.apiGroup(gv.Group)
		list.Groups = append(list.Groups, g)
	}
	s.serveDiscovery(w, r, list)
}

func (s *Server) serveAPIGroup(w http.ResponseWriter, r *http.Request) {
	g, ok := s.apiGroup(chi.URLParam(r, "group"))
	if !ok {
		s.writeError(w, r, apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path))
		return
	}
	s.serveDiscovery(w, r, &g)
}

// serveResourceList answers /api/v1 and /apis/<group>/<version>.
func (s *Server) serveResourceList(w http.ResponseWriter, r *http.Request) {
	gv := schema.GroupVersion{Version: "v1"}
	if strings.HasPrefix(r.URL.Path, "/apis/") {
		gv = schema.GroupVersion{Group: chi.URLParam(r, "group"), Version: chi.URLParam(r, "version")}
	}
	list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
	for _, res := range s.table.all() {
		if res.GroupVersion() != gv {
			continue
		}
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: res.Plural, SingularName: res.Singular, Namespaced: res.Namespaced, Kind: res.GVK.Kind,
			Verbs: res.Verbs(), ShortNames: res.ShortNames, Categories: res.Categories,
		})
		for _, sub := range res.Subresources {
			info := subresourceInfo[sub]
			ar := metav1.APIResource{Name: res.Plural + "/" + string(sub), Namespaced: res.Namespaced, Kind: res.GVK.Kind, Verbs: info.verbs}
			if info.gvk != nil {
				ar.Group, ar.Version, ar.Kind = info.gvk.Group, info.gvk.Version, info.gvk.Kind
			}
			list.APIResources = append(list.APIResources, ar)
		}
	}
	if len(list.APIResources) == 0 {
		s.writeError(w, r, apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path))
		return
	}
	s.serveDiscovery(w, r, list)
}

// readyChecks returns every readiness check: etcd plus the configured ones.
func (s *Server) readyChecks() map[string]func(context.Context) error {
	checks := map[string]func(context.Context) error{
		"etcd": func(ctx context.Context) error { _, err := s.store.Revision(ctx); return err },
	}
	for name, c := range s.cfg.ReadyChecks {
		checks[name] = c
	}
	return checks
}

func (s *Server) serveLive(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if _, ok := r.URL.Query()["verbose"]; ok {
		_, _ = w.Write([]byte("[+]ping ok\nlivez check passed\n"))
		return
	}
	_, _ = w.Write([]byte("ok"))
}

func (s *Server) serveReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	checks := s.readyChecks()
	names := make([]string, 0, len(checks))
	for n := range checks {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	failed := false
	for _, n := range names {
		if err := checks[n](ctx); err != nil {
			failed = true
			b.WriteString("[-]" + n + " failed: " + err.Error() + "\n")
		} else {
			b.WriteString("[+]" + n + " ok\n")
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, verbose := r.URL.Query()["verbose"]
	if failed {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(b.String() + "readyz check failed\n"))
		return
	}
	if verbose {
		_, _ = w.Write([]byte(b.String() + "readyz check passed\n"))
		return
	}
	_, _ = w.Write([]byte("ok"))
}
