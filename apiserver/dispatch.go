package apiserver

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/apiserver/resource"
)

// statusRecorder remembers the status code for metrics, and sends the
// warnings admission collected for the request with the header.
type statusRecorder struct {
	http.ResponseWriter
	code     int
	warnings *warningSink
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
		r.warnings.write(r.ResponseWriter)
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
		r.warnings.write(r.ResponseWriter)
	}
	return r.ResponseWriter.Write(b)
}

// Hijack lets the streaming subresources (exec, attach, port-forward)
// take the connection over through the recorder.
func (r *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := r.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("%T cannot be hijacked", r.ResponseWriter)
	}
	if r.code == 0 {
		r.code = http.StatusSwitchingProtocols
	}
	return h.Hijack()
}

// Unwrap lets http.ResponseController reach the connection.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush lets watch handlers stream through the recorder.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// serveResource serves every request under /api/v1 and /apis/<g>/<v>.
func (s *Server) serveResource(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ri, ok := parseRequestInfo(r)
	rec := &statusRecorder{ResponseWriter: w, warnings: &warningSink{}}
	r = r.WithContext(context.WithValue(r.Context(), warningsKey{}, rec.warnings))
	// The labels name a resource and subresource only once the request
	// is known to be for ones this server serves, and verbs outside the
	// API's set are "other", as upstream: a client, authorized or not,
	// cannot add series by sending paths or methods of its own.
	metricResource, metricSub := "unknown", ""
	defer func() {
		s.cfg.Metrics.observeRequest(cleanVerb(ri.Verb), metricResource, metricSub, rec.code, time.Since(start))
	}()
	if !ok {
		s.writeError(rec, r, apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path))
		return
	}
	// Authorized before anything else, so that a caller learns nothing of
	// what is served unless it may ask, as upstream.
	attrs := auth.Attributes{
		User: auth.UserFrom(r.Context()), Verb: ri.Verb, ResourceRequest: true, APIGroup: ri.Group, APIVersion: ri.Version,
		Resource: ri.Resource, Subresource: ri.Subresource, Namespace: ri.Namespace, Name: ri.Name,
	}
	if ri.Verb == "list" || ri.Verb == "watch" || ri.Verb == "deletecollection" {
		// The field selector, parsed from the query value the handler
		// filters by, goes to the authorizers; a list or watch of one
		// object by name is about that object, as upstream's request-info
		// parser says (a kubelet watching one Secret).
		if sel, err := fields.ParseSelector(r.URL.Query().Get("fieldSelector")); err == nil {
			attrs.FieldSelector = sel.Requirements()
			if v, ok := sel.RequiresExactMatch("metadata.name"); ok && ri.Name == "" && ri.Verb != "deletecollection" {
				attrs.Name = v
			}
		}
	}
	if !s.authorized(rec, r, attrs) {
		return
	}
	res, err := s.lookup(ri)
	if err != nil {
		s.writeError(rec, r, err)
		return
	}
	metricResource = res.Plural
	if err := s.checkScope(res, ri); err != nil {
		s.writeError(rec, r, err)
		return
	}
	metricSub = ri.Subresource
	release, err := s.limit(r.Context(), ri)
	if err != nil {
		s.writeError(rec, r, err)
		return
	}
	defer release()
	ctx := withManager(r.Context(), managerOf(r))
	if !longRunning(ri) {
		timeout, err := requestTimeout(r.URL.Query())
		if err != nil {
			s.writeError(rec, r, err)
			return
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	r = r.WithContext(ctx)
	if err := checkOptions(r, ri); err != nil {
		s.writeError(rec, r, err)
		return
	}
	if err := s.dispatch(rec, r, ri, res); err != nil {
		s.writeError(rec, r, err)
	}
}

// longRunning reports whether a request streams with no deadline of its
// own: watches, pods/log and the streaming subresources, as upstream.
func longRunning(ri RequestInfo) bool {
	return ri.Verb == "watch" || ri.Subresource == string(resource.Log) || isStreamSubresource(ri.Subresource)
}

// checkScope rejects paths whose namespace part does not fit the resource.
func (s *Server) checkScope(res *resource.Resource, ri RequestInfo) error {
	if !res.Namespaced && ri.Namespace != "" {
		return apierrors.NewNotFound(res.GroupResource(), ri.Name)
	}
	if ri.Subresource != "" && !res.Serves(resource.Subresource(ri.Subresource)) {
		return apierrors.NewNotFound(schema.GroupResource{Group: res.GVK.Group, Resource: res.Plural + "/" + ri.Subresource}, ri.Name)
	}
	if res.Namespaced && ri.Namespace == "" && ri.Name != "" {
		return apierrors.NewBadRequest("the server could not find the requested resource: a namespace is required for " + res.Plural)
	}
	return nil
}

// checkOptions decodes and validates the query of a get, create, update or
// patch as upstream does; lists, watches and deletes check theirs in their
// handlers, which use them.
func checkOptions(r *http.Request, ri RequestInfo) error {
	switch ri.Verb {
	case "get":
		if ri.Subresource == string(resource.Log) || isStreamSubresource(ri.Subresource) {
			return nil // PodLogOptions and the like, read by the handler
		}
		return decodeParams(r.URL.Query(), &metav1.GetOptions{})
	case "create", "update", "patch":
		if isStreamSubresource(ri.Subresource) {
			return nil // PodExecOptions and the like, read by the handler
		}
		return checkWriteOptions(r, ri.Verb)
	}
	return nil
}

// dispatch calls the handler for the verb and subresource.
func (s *Server) dispatch(w http.ResponseWriter, r *http.Request, ri RequestInfo, res *resource.Resource) error {
	notAllowed := errMethodNotAllowed(r.Method, res.Plural)
	if res.CreateOnly {
		if ri.Verb == "create" && ri.Name == "" && ri.Subresource == "" {
			return s.serveReview(w, r, ri, res)
		}
		return notAllowed
	}
	switch resource.Subresource(ri.Subresource) {
	case "":
		switch ri.Verb {
		case "get":
			return s.get(w, r, ri, res)
		case "list":
			return s.list(w, r, ri, res)
		case "watch":
			return s.watch(w, r, ri, res)
		case "create":
			if ri.Name != "" {
				return notAllowed
			}
			return s.create(w, r, ri, res)
		case "update":
			if ri.Name == "" {
				return notAllowed
			}
			return s.update(w, r, ri, res, "")
		case "patch":
			if ri.Name == "" {
				return notAllowed
			}
			return s.patch(w, r, ri, res, "")
		case "delete":
			return s.delete(w, r, ri, res)
		case "deletecollection":
			return s.deleteCollection(w, r, ri, res)
		}
	case resource.Status:
		switch ri.Verb {
		case "get":
			return s.get(w, r, ri, res)
		case "update":
			return s.update(w, r, ri, res, resource.Status)
		case "patch":
			return s.patch(w, r, ri, res, resource.Status)
		}
	case resource.Finalize:
		if ri.Verb == "update" {
			return s.update(w, r, ri, res, resource.Finalize)
		}
	case resource.Scale:
		switch ri.Verb {
		case "get":
			return s.getScale(w, r, ri, res)
		case "update":
			return s.updateScale(w, r, ri, res)
		case "patch":
			return s.patchScale(w, r, ri, res)
		}
	case resource.Binding:
		if ri.Verb == "create" {
			return s.bind(w, r, ri, res)
		}
	case resource.Eviction:
		if ri.Verb == "create" && res.GVK == corev1.SchemeGroupVersion.WithKind("Pod") {
			return s.evict(w, r, ri, res)
		}
	case resource.Token:
		if ri.Verb == "create" {
			return s.tokenRequest(w, r, ri, res)
		}
	case resource.Approval:
		switch ri.Verb {
		case "get":
			return s.get(w, r, ri, res)
		case "update":
			return s.update(w, r, ri, res, resource.Approval)
		case "patch":
			return s.patch(w, r, ri, res, resource.Approval)
		}
	case resource.Log:
		if ri.Verb == "get" && res.GVK == corev1.SchemeGroupVersion.WithKind("Pod") {
			return s.podLog(w, r, ri, res)
		}
	case resource.Exec, resource.Attach, resource.PortForward:
		if (ri.Verb == "get" || ri.Verb == "create") && res.GVK == corev1.SchemeGroupVersion.WithKind("Pod") {
			return s.podStream(w, r, ri, res)
		}
	}
	return notAllowed
}
