package apiserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubebus/kubebus/apiserver/resource"
)

// KubeletClientUser is the common name of the client certificate the API
// server presents to kubelets, as kubeadm names it.
const KubeletClientUser = "kube-apiserver-kubelet-client"

// DefaultKubeletPort is dialled when a node reports no kubelet port.
const DefaultKubeletPort = 10250

// kubeletErrorBody bounds how much of a kubelet's error answer is read.
const kubeletErrorBody = 4 << 10

// KubeletClientTLS returns the TLS configuration the API server dials
// kubelets with (Config.KubeletTLS): the client certificate in certFile and
// keyFile, and ca to verify the kubelets' serving certificates.
func KubeletClientTLS(certFile, keyFile string, ca *x509.CertPool) (*tls.Config, error) {
	if ca == nil {
		return nil, errors.New("kubelet client TLS: no CA to verify kubelets against")
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("loading kubelet client certificate %s: %w", certFile, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: ca, MinVersion: tls.VersionTLS12}, nil
}

// newKubeletClient returns the HTTP client for kubelets, or nil without TLS
// configuration. It never follows redirects.
func newKubeletClient(tc *tls.Config) *http.Client {
	if tc == nil {
		return nil
	}
	return &http.Client{
		Transport: &http.Transport{
			TLSClientConfig:       tc.Clone(),
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: 30 * time.Second,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// podLog serves GET pods/<name>/log by streaming the container's log from
// the kubelet of the pod's node, as upstream does. The kubelet's error
// answers keep their code and message. insecureSkipTLSVerifyBackend is
// accepted and ignored: kubelets are always verified against the CA.
func (s *Server) podLog(w http.ResponseWriter, r *http.Request, ri RequestInfo, res *resource.Resource) error {
	opts, err := podLogOptions(r.URL.Query(), ri.Name)
	if err != nil {
		return err
	}
	obj, _, err := s.getObject(r.Context(), res, ri.Namespace, ri.Name)
	if err != nil {
		return err
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return apierrors.NewInternalError(fmt.Errorf("pods/log: stored object is a %T", obj))
	}
	container, err := logContainer(pod, opts.Container)
	if err != nil {
		return err
	}
	hostPort, err := s.podKubelet(r.Context(), pod, "log")
	if err != nil {
		return err
	}
	u := kubeletLogURL(hostPort, pod.Namespace, pod.Name, container, opts)
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, u, nil)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("building kubelet request: %w", err))
	}
	resp, err := s.kubelet.Do(req)
	if err != nil {
		if r.Context().Err() != nil {
			return nil // the client went away
		}
		return apierrors.NewInternalError(fmt.Errorf("fetching logs from the kubelet on node %q: %w", pod.Spec.NodeName, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return kubeletError(resp, pod.Spec.NodeName, pod.Name)
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	flush := func() {}
	if f, ok := w.(http.Flusher); ok {
		flush = f.Flush
	}
	flush()
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return nil // the client went away
			}
			flush()
		}
		if err != nil {
			if err != io.EOF && r.Context().Err() == nil {
				s.log.DebugContext(r.Context(), "pods/log stream from kubelet ended", "pod", ri.Namespace+"/"+ri.Name, "node", pod.Spec.NodeName, "err", err)
			}
			return nil
		}
	}
}

// podLogOptions reads and validates the query of a pods/log request.
func podLogOptions(q url.Values, name string) (*corev1.PodLogOptions, error) {
	opts := &corev1.PodLogOptions{
		Container:                    q.Get("container"),
		Follow:                       queryBool(q, "follow"),
		Previous:                     queryBool(q, "previous"),
		Timestamps:                   queryBool(q, "timestamps"),
		InsecureSkipTLSVerifyBackend: queryBool(q, "insecureSkipTLSVerifyBackend"),
	}
	var err error
	if opts.SinceSeconds, err = queryInt(q, "sinceSeconds"); err != nil {
		return nil, err
	}
	if opts.TailLines, err = queryInt(q, "tailLines"); err != nil {
		return nil, err
	}
	if opts.LimitBytes, err = queryInt(q, "limitBytes"); err != nil {
		return nil, err
	}
	if v := q.Get("sinceTime"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("sinceTime: %q is not an RFC 3339 time", v))
		}
		opts.SinceTime = &metav1.Time{Time: t}
	}
	var errs field.ErrorList
	if opts.TailLines != nil && *opts.TailLines < 0 {
		errs = append(errs, field.Invalid(field.NewPath("tailLines"), *opts.TailLines, "must be greater than or equal to 0"))
	}
	if opts.LimitBytes != nil && *opts.LimitBytes < 1 {
		errs = append(errs, field.Invalid(field.NewPath("limitBytes"), *opts.LimitBytes, "must be greater than 0"))
	}
	switch {
	case opts.SinceSeconds != nil && opts.SinceTime != nil:
		errs = append(errs, field.Forbidden(field.NewPath(""), "at most one of `sinceTime` or `sinceSeconds` may be specified"))
	case opts.SinceSeconds != nil && *opts.SinceSeconds < 1:
		errs = append(errs, field.Invalid(field.NewPath("sinceSeconds"), *opts.SinceSeconds, "must be greater than 0"))
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("PodLogOptions").GroupKind(), name, errs)
	}
	return opts, nil
}

// queryBool reads a boolean query parameter as upstream's conversion
// (runtime.Convert_Slice_string_To_bool) does: absent is false; "0" and
// "false" in any case are false; anything else, even empty, is true.
func queryBool(q url.Values, name string) bool {
	v, ok := q[name]
	if !ok || len(v) == 0 {
		return false
	}
	switch strings.ToLower(v[0]) {
	case "false", "0":
		return false
	}
	return true
}

func queryInt(q url.Values, name string) (*int64, error) {
	v := q.Get(name)
	if v == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s: %q is not an integer", name, v))
	}
	return &n, nil
}

// logContainer picks the container whose log is asked for, with upstream's
// rules and messages: the named one, which must exist; else the only one.
func logContainer(pod *corev1.Pod, name string) (string, error) {
	var names []string
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		names = append(names, c.Name)
	}
	if name != "" {
		for _, n := range names {
			if n == name {
				return name, nil
			}
		}
		return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, pod.Name))
	}
	switch len(pod.Spec.Containers) {
	case 1:
		return pod.Spec.Containers[0].Name, nil
	case 0:
		return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s", pod.Name))
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: %s", pod.Name, names))
}

// podKubelet is the host:port of the kubelet of pod's node, for the
// subresource sub that the API server proxies to it.
func (s *Server) podKubelet(ctx context.Context, pod *corev1.Pod, sub string) (string, error) {
	if pod.Spec.NodeName == "" {
		return "", apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", pod.Name))
	}
	nodes, ok := s.table.get(corev1.SchemeGroupVersion.WithResource("nodes"))
	if !ok {
		return "", apierrors.NewInternalError(fmt.Errorf("pods/%s: this server does not serve nodes", sub))
	}
	nobj, _, err := s.getObject(ctx, nodes, "", pod.Spec.NodeName)
	if err != nil {
		return "", err
	}
	node, ok := nobj.(*corev1.Node)
	if !ok {
		return "", apierrors.NewInternalError(fmt.Errorf("pods/%s: stored node is a %T", sub, nobj))
	}
	hostPort, err := kubeletAddress(node)
	if err != nil {
		return "", err
	}
	if s.kubelet == nil {
		return "", apierrors.NewInternalError(fmt.Errorf("this API server has no client certificate for kubelets, so it cannot serve pods/%s", sub))
	}
	return hostPort, nil
}

// kubeletAddressTypes is the order in which a node's addresses are tried.
var kubeletAddressTypes = []corev1.NodeAddressType{
	corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeInternalDNS, corev1.NodeExternalDNS, corev1.NodeHostName,
}

// kubeletAddress returns host:port of the node's kubelet.
func kubeletAddress(node *corev1.Node) (string, error) {
	port := int(node.Status.DaemonEndpoints.KubeletEndpoint.Port)
	if port <= 0 {
		port = DefaultKubeletPort
	}
	for _, typ := range kubeletAddressTypes {
		for _, a := range node.Status.Addresses {
			if a.Type == typ && a.Address != "" {
				return net.JoinHostPort(a.Address, strconv.Itoa(port)), nil
			}
		}
	}
	return "", apierrors.NewInternalError(fmt.Errorf("node %q reports no address its kubelet can be reached at", node.Name))
}

// kubeletLogURL is the kubelet's containerLogs URL for the options.
func kubeletLogURL(hostPort, namespace, pod, container string, opts *corev1.PodLogOptions) string {
	q := url.Values{}
	for name, on := range map[string]bool{"follow": opts.Follow, "previous": opts.Previous, "timestamps": opts.Timestamps} {
		if on {
			q.Set(name, "true")
		}
	}
	for name, v := range map[string]*int64{"sinceSeconds": opts.SinceSeconds, "tailLines": opts.TailLines, "limitBytes": opts.LimitBytes} {
		if v != nil {
			q.Set(name, strconv.FormatInt(*v, 10))
		}
	}
	if opts.SinceTime != nil {
		q.Set("sinceTime", opts.SinceTime.UTC().Format(time.RFC3339))
	}
	u := url.URL{Scheme: "https", Host: hostPort,
		Path:     "/containerLogs/" + namespace + "/" + pod + "/" + container,
		RawPath:  "/containerLogs/" + url.PathEscape(namespace) + "/" + url.PathEscape(pod) + "/" + url.PathEscape(container),
		RawQuery: q.Encode()}
	return u.String()
}

// kubeletError turns a kubelet's error answer into a Status with the same
// code and the kubelet's message (plain text, or a Status's message).
func kubeletError(resp *http.Response, node, pod string) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, kubeletErrorBody))
	msg := strings.TrimSpace(string(body))
	var st metav1.Status
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") && json.Unmarshal(body, &st) == nil && st.Message != "" {
		msg = st.Message
	}
	if msg == "" {
		msg = fmt.Sprintf("the kubelet on node %q answered %s", node, resp.Status)
	}
	switch resp.StatusCode {
	case http.StatusBadRequest:
		return apierrors.NewBadRequest(msg)
	case http.StatusNotFound:
		return statusError(http.StatusNotFound, metav1.StatusReasonNotFound, msg)
	case http.StatusUnauthorized, http.StatusForbidden:
		// The kubelet refused the API server, not the user.
		return apierrors.NewInternalError(fmt.Errorf("the kubelet on node %q refused the API server's request (%s): %s", node, resp.Status, msg))
	}
	se := apierrors.NewGenericServerResponse(resp.StatusCode, "get", schema.GroupResource{Resource: "pods/log"}, pod, msg, 0, false)
	se.ErrStatus.Message = msg
	return se
}
