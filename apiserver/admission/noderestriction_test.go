package admission

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"net/http"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// podMap is a PodGetter over fixed pods keyed "namespace/name".
type podMap map[string]*corev1.Pod

func (m podMap) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	if p, ok := m[namespace+"/"+name]; ok {
		return p, nil
	}
	return nil, apierrors.NewNotFound(podsResource, name)
}

// nodeMap is a NodeGetter over fixed nodes.
type nodeMap map[string]*corev1.Node

func (m nodeMap) GetNode(_ context.Context, name string) (*corev1.Node, error) {
	if n, ok := m[name]; ok {
		return n, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, name)
}

func nodeUser(name string) auth.User {
	return auth.User{Name: "system:node:" + name, Groups: []string{auth.NodesGroup, auth.AllAuthenticated}}
}

func boundPod(name, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "app", UID: types.UID(name + "-uid")},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
}

func mirrorPod(mutate func(*corev1.Pod)) *corev1.Pod {
	p := boundPod("static-n1", "n1")
	p.UID = ""
	p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "n1-uid", Controller: ptr.To(true)}}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func nodeObj(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
}

// claim is a bound claim of node n1's pods, changed by mutate.
func claim(mutate func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "app", ResourceVersion: "7"},
		Spec:   corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1", AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}
	if mutate != nil {
		mutate(c)
	}
	return c
}

// csr is node n1 creating a CertificateSigningRequest named csr-1 to signer
// with a request for common name cn.
func csr(t *testing.T, signer, cn string) *auth.AdmissionRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: []string{"system:nodes"}}}, key)
	if err != nil {
		t.Fatal(err)
	}
	obj := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "csr-1"},
		Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: signer, Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})}}
	return &auth.AdmissionRequest{Operation: auth.Create, Object: obj,
		Attributes: auth.Attributes{User: nodeUser("n1"), APIGroup: "certificates.k8s.io", Resource: "certificatesigningrequests", Name: "csr-1"}}
}

func TestNodeRestriction(t *testing.T) {
	t.Parallel()
	pods := podMap{"app/mine": withTokenVolume(boundPod("mine", "n1"), ""), "app/theirs": boundPod("theirs", "n2")}
	nodes := nodeMap{"n1": {ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "n1-uid"}}}
	n1 := nodeUser("n1")
	r := func(op auth.Operation, u auth.User, group, resource, sub, ns, name string, obj, old runtime.Object) *auth.AdmissionRequest {
		return &auth.AdmissionRequest{Operation: op, Subresource: sub, Object: obj, OldObject: old,
			Attributes: auth.Attributes{User: u, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}}
	}
	pod := func(op auth.Operation, sub, name string, obj, old runtime.Object) *auth.AdmissionRequest {
		return r(op, n1, "", "pods", sub, "app", name, obj, old)
	}
	node := func(op auth.Operation, name string, obj, old runtime.Object) *auth.AdmissionRequest {
		return r(op, n1, "", "nodes", "", "", name, obj, old)
	}
	token := func(ref *authenticationv1.BoundObjectReference) *auth.AdmissionRequest {
		return r(auth.Create, n1, "", "serviceaccounts", "token", "app", "default", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref}}, nil)
	}
	lease := func(op auth.Operation, ns, name string) *auth.AdmissionRequest {
		return r(op, n1, "coordination.k8s.io", "leases", "", ns, name, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}, nil)
	}
	const (
		forbidden = http.StatusForbidden
		notFound  = http.StatusNotFound
	)
	tests := []struct {
		name string
		req  *auth.AdmissionRequest
		code int32
		msg  string
	}{
		// Proxies write only proxy Leases.
		{name: "a proxy updates a proxy lease", req: r(auth.Update, auth.User{Name: ProxyUser}, "coordination.k8s.io", "leases", "", "kube-node-lease", "kube-proxy-n1",
			&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy-n1", Namespace: "kube-node-lease"}}, nil)},
		{name: "a proxy creates a proxy lease", req: r(auth.Create, auth.User{Name: ProxyUser}, "coordination.k8s.io", "leases", "", "kube-node-lease", "",
			&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy-n2", Namespace: "kube-node-lease"}}, nil)},
		{name: "a proxy updates a kubelet's lease", req: r(auth.Update, auth.User{Name: ProxyUser}, "coordination.k8s.io", "leases", "", "kube-node-lease", "n1",
			&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "kube-node-lease"}}, nil),
			code: forbidden, msg: `leases.coordination.k8s.io "n1" is forbidden: a proxy can only write leases named kube-proxy-<node> in the "kube-node-lease" namespace`},
		{name: "a proxy creates a lease named like a kubelet's", req: r(auth.Create, auth.User{Name: ProxyUser}, "coordination.k8s.io", "leases", "", "kube-node-lease", "",
			&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n3", Namespace: "kube-node-lease"}}, nil),
			code: forbidden, msg: `leases.coordination.k8s.io "n3" is forbidden: a proxy can only write leases named kube-proxy-<node> in the "kube-node-lease" namespace`},
		{name: "a proxy lease name elsewhere", req: r(auth.Update, auth.User{Name: ProxyUser}, "coordination.k8s.io", "leases", "", "kube-system", "kube-proxy-n1",
			&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy-n1", Namespace: "kube-system"}}, nil),
			code: forbidden, msg: `leases.coordination.k8s.io "kube-proxy-n1" is forbidden: a proxy can only write leases named kube-proxy-<node> in the "kube-node-lease" namespace`},

		// Who is restricted.
		{name: "a user that is no node passes", req: r(auth.Create, auth.User{Name: "alice"}, "", "nodes", "", "", "n2", nodeObj("n2", nil), nil)},
		{name: "a node name outside system:nodes passes", req: r(auth.Create, auth.User{Name: "system:node:n1"}, "", "nodes", "", "", "n2", nodeObj("n2", nil), nil)},
		{name: "a node user without a name", req: r(auth.Create, auth.User{Name: "system:node:", Groups: []string{auth.NodesGroup}}, "", "nodes", "", "", "n2", nodeObj("n2", nil), nil),
			code: forbidden, msg: `nodes "n2" is forbidden: could not determine node from user "system:node:"`},

		// Pods.
		{name: "mirror pod bound to itself", req: pod(auth.Create, "", "static-n1", mirrorPod(nil), nil)},
		{name: "not a mirror pod", req: pod(auth.Create, "", "static-n1", mirrorPod(func(p *corev1.Pod) { p.Annotations = nil }), nil),
			code: forbidden, msg: `pods "static-n1" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods`},
		{name: "mirror pod bound to another node", req: pod(auth.Create, "", "static-n1", mirrorPod(func(p *corev1.Pod) { p.Spec.NodeName = "n2" }), nil),
			code: forbidden, msg: `pods "static-n1" is forbidden: node "n1" can only create pods with spec.nodeName set to itself`},
		{name: "mirror pod without owner", req: pod(auth.Create, "", "static-n1", mirrorPod(func(p *corev1.Pod) { p.OwnerReferences = nil }), nil),
			code: forbidden, msg: `pods "static-n1" is forbidden: node "n1" can only create pods with an owner reference set to itself`},
		{name: "mirror pod owned by another node", req: pod(auth.Create, "", "static-n1", mirrorPod(func(p *corev1.Pod) { p.OwnerReferences[0].Name = "n2" }), nil),
			code: forbidden, msg: `pods "static-n1" is forbidden: node "n1" can only create pods with an owner reference set to itself`},
		{name: "mirror pod owner not a controller", req: pod(auth.Create, "", "static-n1", mirrorPod(func(p *corev1.Pod) { p.OwnerReferences[0].Controller = nil }), nil),
			code: forbidden, msg: `pods "static-n1" is forbidden: node "n1" can only create pods with a controller owner reference set to itself`},
		{name: "mirror pod owner with the wrong uid", req: pod(auth.Create, "", "static-n1", mirrorPod(func(p *corev1.Pod) { p.OwnerReferences[0].UID = "old" }), nil),
			code: forbidden, msg: `pods "static-n1" is forbidden: node n1 UID mismatch: expected old got n1-uid`},
		{name: "mirror pod with a service account", req: pod(auth.Create, "", "static-n1", mirrorPod(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "default" }), nil),
			code: forbidden, msg: `pods "static-n1" is forbidden: node "n1" can not create pods that reference a service account`},
		{name: "mirror pod with a secret volume", req: pod(auth.Create, "", "static-n1", mirrorPod(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}}
		}), nil), code: forbidden, msg: `pods "static-n1" is forbidden: node "n1" can not create pods that reference secrets`},
		{name: "mirror pod with a configmap env", req: pod(auth.Create, "", "static-n1", mirrorPod(func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "k"}}}}
		}), nil), code: forbidden, msg: `pods "static-n1" is forbidden: node "n1" can not create pods that reference configmaps`},
		{name: "mirror pod with a claim", req: pod(auth.Create, "", "static-n1", mirrorPod(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "d"}}}}
		}), nil), code: forbidden, msg: `pods "static-n1" is forbidden: node "n1" can not create pods that reference persistentvolumeclaims`},
		{name: "mirror pod with a generic ephemeral volume", req: pod(auth.Create, "", "static-n1", mirrorPod(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}}}
		}), nil), code: forbidden, msg: `pods "static-n1" is forbidden: node "n1" can not create pods that reference persistentvolumeclaims`},
		{name: "update a pod", req: pod(auth.Update, "", "mine", boundPod("mine", "n1"), boundPod("mine", "n1")),
			code: forbidden, msg: `pods "mine" is forbidden: unexpected operation "UPDATE", node "n1" can only create and delete mirror pods`},
		{name: "delete a pod bound to itself", req: pod(auth.Delete, "", "mine", nil, boundPod("mine", "n1"))},
		{name: "delete a pod bound elsewhere", req: pod(auth.Delete, "", "theirs", nil, boundPod("theirs", "n2")),
			code: forbidden, msg: `pods "theirs" is forbidden: node "n1" can only delete pods with spec.nodeName set to itself`},
		{name: "delete looks the pod up when not given", req: pod(auth.Delete, "", "theirs", nil, nil),
			code: forbidden, msg: `pods "theirs" is forbidden: node "n1" can only delete pods with spec.nodeName set to itself`},
		{name: "status of a pod bound to itself", req: pod(auth.Update, "status", "mine", boundPod("mine", "n1"), boundPod("mine", "n1"))},
		{name: "status of a pod bound elsewhere", req: pod(auth.Update, "status", "theirs", boundPod("theirs", "n2"), boundPod("theirs", "n2")),
			code: forbidden, msg: `pods "theirs" is forbidden: node "n1" can only update pod status for pods with spec.nodeName set to itself`},
		{name: "labels through status", req: pod(auth.Update, "status", "mine", func() *corev1.Pod {
			p := boundPod("mine", "n1")
			p.Labels = map[string]string{"x": "y"}
			return p
		}(), boundPod("mine", "n1")), code: forbidden, msg: `pods "mine" is forbidden: node "n1" cannot update labels through pod status`},
		{name: "other pod subresource", req: pod(auth.Update, "ephemeralcontainers", "mine", boundPod("mine", "n1"), boundPod("mine", "n1")),
			code: forbidden, msg: `pods "mine" is forbidden: unexpected pod subresource "ephemeralcontainers", only 'status' and 'eviction' are allowed`},
		{name: "evict a pod bound to itself", req: pod(auth.Create, "eviction", "mine", &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "mine"}}, nil)},
		{name: "evict a pod bound elsewhere", req: pod(auth.Create, "eviction", "theirs", &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "theirs"}}, nil),
			code: forbidden, msg: `pods "theirs" is forbidden: node n1 can only evict pods with spec.nodeName set to itself`},
		{name: "evict a missing pod", req: pod(auth.Create, "eviction", "gone", &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "gone"}}, nil),
			code: notFound, msg: `pods "gone" not found`},

		// Nodes.
		{name: "register itself", req: node(auth.Create, "n1", nodeObj("n1", map[string]string{
			"kubernetes.io/hostname": "n1", "kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
			"node.kubernetes.io/instance-type": "big", "topology.kubernetes.io/zone": "z",
			"kubelet.kubernetes.io/x": "1", "foo.node.kubernetes.io/y": "2", "example.com/team": "a",
		}), nil)},
		{name: "register another node", req: node(auth.Create, "n2", nodeObj("n2", nil), nil),
			code: forbidden, msg: `nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"`},
		{name: "register with restricted labels", req: node(auth.Create, "n1", nodeObj("n1", map[string]string{
			"node-restriction.kubernetes.io/pool": "a", "node-role.kubernetes.io/control-plane": "", "k8s.io/x": "y",
		}), nil), code: forbidden, msg: `nodes "n1" is forbidden: node "n1" is not allowed to set the following labels: k8s.io/x, node-restriction.kubernetes.io/pool, node-role.kubernetes.io/control-plane`},
		{name: "update its status", req: node(auth.Update, "n1", nodeObj("n1", map[string]string{"kubernetes.io/os": "linux"}, corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoSchedule}),
			nodeObj("n1", map[string]string{"kubernetes.io/os": "linux"}, corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoSchedule}))},
		{name: "update its taints", req: node(auth.Update, "n1", nodeObj("n1", nil), nodeObj("n1", nil, corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoSchedule})),
			code: forbidden, msg: `nodes "n1" is forbidden: node "n1" is not allowed to modify taints`},
		{name: "remove a restricted label", req: node(auth.Update, "n1", nodeObj("n1", nil), nodeObj("n1", map[string]string{"node-restriction.kubernetes.io/pool": "a"})),
			code: forbidden, msg: `nodes "n1" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/pool`},
		{name: "update another node", req: node(auth.Update, "n2", nodeObj("n2", nil), nodeObj("n2", nil)),
			code: forbidden, msg: `nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"`},
		{name: "delete itself", req: node(auth.Delete, "n1", nil, nodeObj("n1", nil))},
		{name: "delete another node", req: node(auth.Delete, "n2", nil, nodeObj("n2", nil)),
			code: forbidden, msg: `nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"`},

		// Leases.
		{name: "its own lease", req: lease(auth.Create, "kube-node-lease", "n1")},
		{name: "update its own lease", req: lease(auth.Update, "kube-node-lease", "n1")},
		{name: "another node's lease", req: lease(auth.Update, "kube-node-lease", "n2"),
			code: forbidden, msg: `leases.coordination.k8s.io "n2" is forbidden: can only access node lease with the same name as the requesting node`},
		{name: "a lease elsewhere", req: lease(auth.Create, "kube-system", "n1"),
			code: forbidden, msg: `leases.coordination.k8s.io "n1" is forbidden: can only access leases in the "kube-node-lease" system namespace`},

		// Tokens.
		{name: "token for a pod on itself", req: token(&authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "mine", UID: "mine-uid"})},
		{name: "token bound to nothing", req: token(nil),
			code: forbidden, msg: `serviceaccounts "default" is forbidden: node requested token not bound to a pod`},
		{name: "token bound to a secret", req: token(&authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Secret", Name: "s", UID: "u"}),
			code: forbidden, msg: `serviceaccounts "default" is forbidden: node requested token not bound to a pod`},
		{name: "token without a uid", req: token(&authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "mine"}),
			code: forbidden, msg: `serviceaccounts "default" is forbidden: node requested token with a pod binding without a uid`},
		{name: "token for a recreated pod", req: token(&authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "mine", UID: "old"}),
			code: forbidden, msg: `serviceaccounts "default" is forbidden: the UID in the bound object reference (old) does not match the UID in record. The object might have been deleted and then recreated`},
		{name: "token for a pod elsewhere", req: token(&authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "theirs", UID: "theirs-uid"}),
			code: forbidden, msg: `serviceaccounts "default" is forbidden: node requested token bound to a pod scheduled on a different node`},
		{name: "token for a missing pod", req: token(&authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "gone", UID: "u"}),
			code: notFound, msg: `pods "gone" not found`},

		// Passing through.
		{name: "certificate signing request to another signer", req: csr(t, "kubernetes.io/kube-apiserver-client", "alice")},

		// Claims of its pods: only what a kubelet reports.
		{name: "claim capacity and conditions", req: r(auth.Update, n1, "", "persistentvolumeclaims", "status", "app", "data",
			claim(func(c *corev1.PersistentVolumeClaim) {
				c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}
				c.Status.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimFileSystemResizePending, Status: corev1.ConditionTrue}}
				c.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}
				c.ResourceVersion = ""
			}), claim(nil))},
		{name: "claim phase", req: r(auth.Update, n1, "", "persistentvolumeclaims", "status", "app", "data",
			claim(func(c *corev1.PersistentVolumeClaim) { c.Status.Phase = corev1.ClaimLost }), claim(nil)),
			code: forbidden, msg: `persistentvolumeclaims "data" is forbidden: node "n1" is not allowed to update fields other than status.quantity and status.conditions`},
		{name: "claim labels through status", req: r(auth.Update, n1, "", "persistentvolumeclaims", "status", "app", "data",
			claim(func(c *corev1.PersistentVolumeClaim) { c.Labels = map[string]string{"x": "y"} }), claim(nil)),
			code: forbidden, msg: `persistentvolumeclaims "data" is forbidden: node "n1" is not allowed to update fields other than status.quantity and status.conditions`},
		{name: "claim itself", req: r(auth.Update, n1, "", "persistentvolumeclaims", "", "app", "data", claim(nil), claim(nil)),
			code: forbidden, msg: `persistentvolumeclaims "data" is forbidden: may only update PVC status`},

		// Certificates from the kubelet signers: only for itself.
		{name: "client certificate for itself", req: csr(t, certificatesv1.KubeAPIServerClientKubeletSignerName, "system:node:n1")},
		{name: "serving certificate for itself", req: csr(t, certificatesv1.KubeletServingSignerName, "system:node:n1")},
		{name: "client certificate for another node", req: csr(t, certificatesv1.KubeAPIServerClientKubeletSignerName, "system:node:n2"),
			code: forbidden, msg: `certificatesigningrequests.certificates.k8s.io "csr-1" is forbidden: can only create a node CSR with CN=system:node:n1`},
		{name: "serving certificate for another node", req: csr(t, certificatesv1.KubeletServingSignerName, "system:node:n2"),
			code: forbidden, msg: `certificatesigningrequests.certificates.k8s.io "csr-1" is forbidden: can only create a node CSR with CN=system:node:n1`},
		{name: "a request that is no CSR", req: r(auth.Create, n1, "certificates.k8s.io", "certificatesigningrequests", "", "", "csr-1",
			&certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "csr-1"},
				Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: certificatesv1.KubeletServingSignerName, Request: []byte("junk")}}, nil),
			code: forbidden, msg: `certificatesigningrequests.certificates.k8s.io "csr-1" is forbidden: unable to parse csr: PEM block type must be CERTIFICATE REQUEST`},
		{name: "event", req: r(auth.Create, n1, "", "events", "", "app", "e", nil, nil)},
		{name: "its own csinode", req: r(auth.Create, n1, "storage.k8s.io", "csinodes", "", "", "n1", nodeObj("n1", nil), nil)},
		{name: "another csinode", req: r(auth.Update, n1, "storage.k8s.io", "csinodes", "", "", "n2", nil, nil),
			code: forbidden, msg: `csinodes.storage.k8s.io "n2" is forbidden: can only access CSINode with the same name as the requesting node`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := NodeRestriction{Pods: pods, Nodes: nodes}.Admit(context.Background(), tc.req)
			expectStatus(t, err, tc.code, tc.msg)
		})
	}
}

// authorizerFunc adapts a function to auth.Authorizer.
type authorizerFunc func(a auth.Attributes) (auth.Decision, string, error)

func (f authorizerFunc) Authorize(_ context.Context, a auth.Attributes) (auth.Decision, string, error) {
	return f(a)
}

// withTokenVolume gives pod a projected ServiceAccount token for audience
// ("" for the API server's, as the kube-api-access volume).
func withTokenVolume(pod *corev1.Pod, audience string) *corev1.Pod {
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "token-" + audience, VolumeSource: corev1.VolumeSource{
		Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: audience, Path: "token"}}}}}})
	return pod
}

// A node may ask for a token only for an audience its pod uses, or one
// the authorizer lets it request, as upstream's
// ServiceAccountNodeAudienceRestriction, judged on the audiences as sent.
func TestNodeRestrictionTokenAudience(t *testing.T) {
	t.Parallel()
	n1 := auth.User{Name: "system:node:n1", Groups: []string{"system:nodes", auth.AllAuthenticated}}
	pods := podMap{
		"app/default": withTokenVolume(boundPod("default", "n1"), ""),
		"app/vault":   withTokenVolume(boundPod("vault", "n1"), "vault"),
		"app/plain":   boundPod("plain", "n1"),
	}
	// The node may request "registry" tokens for the account "puller"
	// only; "flaky" is allowed with an error, "broken" is an error.
	var asked []auth.Attributes
	authz := authorizerFunc(func(a auth.Attributes) (auth.Decision, string, error) {
		asked = append(asked, a)
		if a.Verb != "request-serviceaccounts-token-audience" || a.User.Name != n1.Name {
			return auth.NoOpinion, "", nil
		}
		switch {
		case a.Resource == "registry" && a.Name == "puller":
			return auth.Allow, "", nil
		case a.Resource == "flaky":
			return auth.Allow, "", errors.New("a webhook timed out")
		case a.Resource == "broken":
			return auth.NoOpinion, "", errors.New("a webhook timed out")
		}
		return auth.NoOpinion, "", nil
	})
	token := func(pod, account string, audiences ...string) *auth.AdmissionRequest {
		return &auth.AdmissionRequest{Operation: auth.Create, Subresource: "token",
			Attributes: auth.Attributes{User: n1, Verb: "create", ResourceRequest: true, Resource: "serviceaccounts", Subresource: "token", Namespace: "app", Name: account},
			Object: &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: audiences,
				BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod, UID: types.UID(pod + "-uid")}}}}
	}
	refused := func(audience string) string {
		return `serviceaccounts "default" is forbidden: audience "` + audience + `" not found in pod spec volume, system:node:n1 is not authorized to request tokens for this audience`
	}
	tests := []struct {
		name string
		req  *auth.AdmissionRequest
		msg  string // "" when allowed
	}{
		{name: "no audience, projected without one", req: token("default", "default")},
		{name: "the audience a volume names", req: token("vault", "default", "vault")},
		// As upstream: the API server's audience asked for by name is not
		// the projection without an audience (the kubelet sends none).
		{name: "the API audience by name, projected without one", req: token("default", "default", "https://kubernetes.default.svc.cluster.local"),
			msg: refused("https://kubernetes.default.svc.cluster.local")},
		{name: "no audience for a pod that projects only vault", req: token("vault", "default"), msg: refused("")},
		{name: "another audience", req: token("default", "default", "vault"), msg: refused("vault")},
		{name: "a pod without token volumes", req: token("plain", "default"), msg: refused("")},
		{name: "two audiences", req: token("vault", "default", "vault", "other"),
			msg: `serviceaccounts "default" is forbidden: node may only request 0 or 1 audiences`},
		{name: "an audience the authorizer grants", req: token("plain", "puller", "registry")},
		{name: "that audience for another account", req: token("plain", "default", "registry"), msg: refused("registry")},
		{name: "allowed with an error", req: token("plain", "default", "flaky")},
		{name: "an authorizer error", req: token("plain", "default", "broken"),
			msg: `serviceaccounts "default" is forbidden: error authorizing system:node:n1 to request tokens for audience "broken": a webhook timed out`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := NodeRestriction{Pods: pods, Authorizer: authz}.Admit(context.Background(), tc.req)
			if tc.msg == "" {
				expectStatus(t, err, 0, "")
			} else {
				expectStatus(t, err, http.StatusForbidden, tc.msg)
			}
		})
	}
	var saw bool
	for _, a := range asked {
		saw = saw || a.Resource == "registry" && a.Namespace == "app" && a.Name == "puller" && a.APIGroup == "" && a.ResourceRequest
	}
	if !saw {
		t.Errorf("the authorizer was asked %+v, never about registry for app/puller", asked)
	}
}
