package certificates

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubebus/kubebus/controllers"
)

// rbac answers SubjectAccessReviews as kubeadm's bindings do: system:nodes
// may create certificatesigningrequests/selfnodeclient and
// system:bootstrappers /nodeclient.
func rbac(action k8stesting.Action) (bool, runtime.Object, error) {
	sar := action.(k8stesting.CreateAction).GetObject().(*authzv1.SubjectAccessReview).DeepCopy()
	ra := sar.Spec.ResourceAttributes
	if ra == nil || ra.Group != "certificates.k8s.io" || ra.Resource != "certificatesigningrequests" || ra.Verb != "create" {
		return true, sar, nil
	}
	switch ra.Subresource {
	case "selfnodeclient":
		sar.Status.Allowed = slices.Contains(sar.Spec.Groups, "system:nodes")
	case "nodeclient":
		sar.Status.Allowed = slices.Contains(sar.Spec.Groups, "system:bootstrappers")
	}
	return true, sar, nil
}

// notServed answers SubjectAccessReviews as a server without them.
func notServed(k8stesting.Action) (bool, runtime.Object, error) {
	return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}, "")
}

// cluster returns the Nodes the approver's tests know: n1 and n2 with
// addresses of every type, as a cloud provider reports them.
func cluster() nodes {
	return nodes{
		"n1": nodeAt("n1", "InternalIP", "10.0.0.7", "ExternalIP", "203.0.113.7", "Hostname", "n1",
			"InternalDNS", "n1.internal", "ExternalDNS", "n1.example.com"),
		"n2": nodeAt("n2", "InternalIP", "10.0.0.8", "Hostname", "n2"),
		// n9 claims the API server's name and the kubernetes Service's IP
		// as addresses of its own (a node writes its own status).
		"n9": nodeAt("n9", "InternalIP", "10.0.0.9", "InternalIP", "10.96.0.1", "Hostname", "kubernetes.default.svc", "InternalDNS", "*.default.svc"),
	}
}

// services is a Services' cache holding the kubernetes Service.
type services map[string]*corev1.Service

func (s services) Get(namespace, name string) (*corev1.Service, bool) {
	svc, ok := s[namespace+"/"+name]
	return svc, ok
}

func apiService() services {
	return services{"default/kubernetes": {ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1", ClusterIPs: []string{"10.96.0.1"}}}}
}

func TestApproverReconcile(t *testing.T) {
	t.Parallel()
	nodes := []string{"system:nodes", "system:authenticated"}
	bootstrappers := []string{"system:bootstrappers", "system:authenticated"}
	kubeletClient := certificatesv1.KubeAPIServerClientKubeletSignerName
	kubeletServing := certificatesv1.KubeletServingSignerName
	withKeyEnc := []certificatesv1.KeyUsage{certificatesv1.UsageKeyEncipherment, certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	tests := []struct {
		name        string
		csr         *certificatesv1.CertificateSigningRequest
		sar         k8stesting.ReactionFunc
		wantMessage string // "" when left pending
		wantErr     error
	}{
		{name: "node's own client certificate", csr: newCSR(t, "csr-1", kubeletClient, "system:node:n1", nodes, clientOf("n1"), clientUsages), sar: rbac,
			wantMessage: "Auto approving self kubelet client certificate after SubjectAccessReview."},
		{name: "with key encipherment", csr: newCSR(t, "csr-1", kubeletClient, "system:node:n1", nodes, clientOf("n1"), withKeyEnc), sar: rbac,
			wantMessage: "Auto approving self kubelet client certificate after SubjectAccessReview."},
		{name: "another node's client certificate", csr: newCSR(t, "csr-1", kubeletClient, "system:node:n1", nodes, clientOf("n2"), clientUsages), sar: rbac,
			wantErr: ErrNotAuthorized},
		{name: "bootstrapper", csr: newCSR(t, "csr-1", kubeletClient, "system:bootstrap:abcdef", bootstrappers, clientOf("n2"), clientUsages), sar: rbac,
			wantMessage: "Auto approving kubelet client certificate after SubjectAccessReview."},
		{name: "a user", csr: newCSR(t, "csr-1", kubeletClient, "alice", []string{"system:authenticated"}, clientOf("n2"), clientUsages), sar: rbac,
			wantErr: ErrNotAuthorized},
		{name: "not a kubelet client request", csr: newCSR(t, "csr-1", kubeletClient, "system:node:n1", nodes, servingOf("n1"), clientUsages), sar: rbac},
		{name: "other signer", csr: newCSR(t, "csr-1", certificatesv1.KubeAPIServerClientSignerName, "system:node:n1", nodes, clientOf("n1"), clientUsages), sar: rbac},
		{name: "already approved", csr: withCondition(newCSR(t, "csr-1", kubeletClient, "system:node:n1", nodes, clientOf("n1"), clientUsages), certificatesv1.CertificateApproved), sar: rbac},
		{name: "denied", csr: withCondition(newCSR(t, "csr-1", kubeletClient, "system:node:n1", nodes, clientOf("n1"), clientUsages), certificatesv1.CertificateDenied), sar: rbac},
		{name: "no reviews: own node by name", csr: newCSR(t, "csr-1", kubeletClient, "system:node:n1", nodes, clientOf("n1"), clientUsages), sar: notServed,
			wantMessage: "Auto approving self kubelet client certificate after SubjectAccessReview."},
		{name: "no reviews: another node", csr: newCSR(t, "csr-1", kubeletClient, "system:node:n1", nodes, clientOf("n2"), clientUsages), sar: notServed,
			wantErr: ErrNotAuthorized},
		{name: "no reviews: master", csr: newCSR(t, "csr-1", kubeletClient, "admin", []string{"system:masters"}, clientOf("n2"), clientUsages), sar: notServed,
			wantMessage: "Auto approving kubelet client certificate after SubjectAccessReview."},
		{name: "no reviews: bootstrapper", csr: newCSR(t, "csr-1", kubeletClient, "system:bootstrap:abcdef", bootstrappers, clientOf("n2"), clientUsages), sar: notServed,
			wantMessage: "Auto approving kubelet client certificate after SubjectAccessReview."},
		{name: "node's own serving certificate", csr: newCSR(t, "csr-1", kubeletServing, "system:node:n1", nodes, servingOf("n1"), servingUsages), sar: rbac,
			wantMessage: "Auto approving kubelet serving certificate requested by the node itself."},
		{name: "another node's serving certificate", csr: newCSR(t, "csr-1", kubeletServing, "system:node:n1", nodes, servingOf("n2"), servingUsages), sar: rbac,
			wantErr: ErrNotAuthorized},
		{name: "serving certificate for every name and address of the node's", csr: newCSR(t, "csr-1", kubeletServing, "system:node:n1", nodes,
			servingNaming("n1", []string{"n1", "N1.Internal", "n1.example.com"}, "10.0.0.7", "203.0.113.7"), servingUsages), sar: rbac,
			wantMessage: "Auto approving kubelet serving certificate requested by the node itself."},
		{name: "serving certificate for the node's IP only", csr: newCSR(t, "csr-1", kubeletServing, "system:node:n1", nodes,
			servingNaming("n1", nil, "10.0.0.7"), servingUsages), sar: rbac,
			wantMessage: "Auto approving kubelet serving certificate requested by the node itself."},
		{name: "serving certificate for the API server's name", csr: newCSR(t, "csr-1", kubeletServing, "system:node:n1", nodes,
			servingNaming("n1", []string{"n1", "kubernetes.default.svc"}, "10.0.0.7"), servingUsages), sar: rbac},
		{name: "serving certificate for the kubernetes Service IP", csr: newCSR(t, "csr-1", kubeletServing, "system:node:n1", nodes,
			servingNaming("n1", []string{"n1"}, "10.0.0.7", "10.96.0.1"), servingUsages), sar: rbac},
		{name: "serving certificate for another node's name", csr: newCSR(t, "csr-1", kubeletServing, "system:node:n1", nodes,
			servingNaming("n1", []string{"n2"}), servingUsages), sar: rbac},
		{name: "serving certificate for another node's IP", csr: newCSR(t, "csr-1", kubeletServing, "system:node:n1", nodes,
			servingNaming("n1", nil, "10.0.0.8"), servingUsages), sar: rbac},
		{name: "serving certificate for the API server's name its node claims", csr: newCSR(t, "csr-1", kubeletServing, "system:node:n9", nodes,
			servingNaming("n9", []string{"n9", "kubernetes.default.svc"}, "10.0.0.9"), servingUsages), sar: rbac},
		{name: "serving certificate for the Service IP its node claims", csr: newCSR(t, "csr-1", kubeletServing, "system:node:n9", nodes,
			servingNaming("n9", []string{"n9"}, "10.96.0.1"), servingUsages), sar: rbac},
		{name: "serving certificate for a wildcard its node claims", csr: newCSR(t, "csr-1", kubeletServing, "system:node:n9", nodes,
			servingNaming("n9", []string{"n9", "*.default.svc"}, "10.0.0.9"), servingUsages), sar: rbac},
		{name: "serving certificate for that node's other names", csr: newCSR(t, "csr-1", kubeletServing, "system:node:n9", nodes,
			servingNaming("n9", []string{"n9"}, "10.0.0.9"), servingUsages), sar: rbac,
			wantMessage: "Auto approving kubelet serving certificate requested by the node itself."},
		{name: "serving certificate of a node not known", csr: newCSR(t, "csr-1", kubeletServing, "system:node:n3", nodes, servingOf("n3"), servingUsages), sar: rbac},
		{name: "serving certificate outside system:nodes", csr: newCSR(t, "csr-1", kubeletServing, "system:node:n1", nil, servingOf("n1"), servingUsages), sar: rbac,
			wantErr: ErrNotAuthorized},
		{name: "serving certificate for a client", csr: newCSR(t, "csr-1", kubeletServing, "system:node:n1", nodes, servingOf("n1"), clientUsages), sar: rbac},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			client := fake.NewClientset(tt.csr.DeepCopy())
			client.PrependReactor("create", "subjectaccessreviews", tt.sar)
			now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
			a := &approver{client: client, csrs: csrs{"csr-1": tt.csr}, nodes: cluster(), services: apiService(), now: func() time.Time { return now }, log: slog.New(slog.DiscardHandler)}
			_, err := a.Reconcile(context.Background(), controllers.Request{Name: "csr-1"})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Reconcile error = %v, want %v", err, tt.wantErr)
			}
			var approvals []*certificatesv1.CertificateSigningRequest
			for _, act := range client.Actions() {
				if act.GetVerb() == "update" {
					if act.GetSubresource() != "approval" {
						t.Fatalf("wrote %s/%s, want the approval subresource", act.GetResource().Resource, act.GetSubresource())
					}
					approvals = append(approvals, act.(k8stesting.UpdateAction).GetObject().(*certificatesv1.CertificateSigningRequest))
				}
			}
			if tt.wantMessage == "" {
				if len(approvals) != 0 {
					t.Fatalf("approved %+v, want it left pending", approvals[0].Status.Conditions)
				}
				return
			}
			if len(approvals) != 1 {
				t.Fatalf("%d approvals, want 1", len(approvals))
			}
			conds := approvals[0].Status.Conditions
			if len(conds) != 1 || conds[0].Type != certificatesv1.CertificateApproved || conds[0].Status != corev1.ConditionTrue ||
				conds[0].Reason != ReasonAutoApproved || conds[0].Message != tt.wantMessage || !conds[0].LastUpdateTime.Time.Equal(now) {
				t.Fatalf("conditions = %+v, want Approved %q", conds, tt.wantMessage)
			}
			if len(tt.csr.Status.Conditions) != 0 {
				t.Fatal("Reconcile modified the cached object")
			}
		})
	}
}

// approvals returns the CSRs client was asked to approve.
func approvals(t *testing.T, client *fake.Clientset) []string {
	t.Helper()
	var names []string
	for _, act := range client.Actions() {
		if act.GetVerb() == "update" && act.GetSubresource() == "approval" {
			names = append(names, act.(k8stesting.UpdateAction).GetObject().(*certificatesv1.CertificateSigningRequest).Name)
		}
	}
	return names
}

// TestApproverServingWaitsForNode follows a kubelet that asks for its
// serving certificate before the controller knows its Node, then before it
// knows the Node's addresses: the CSR stays pending, and the Nodes'
// handler queues it again until it is approved.
func TestApproverServingWaitsForNode(t *testing.T) {
	t.Parallel()
	nodesGroup := []string{"system:nodes", "system:authenticated"}
	kubeletServing := certificatesv1.KubeletServingSignerName
	own := newCSR(t, "csr-own", kubeletServing, "system:node:n1", nodesGroup, servingNaming("n1", []string{"n1"}, "10.0.0.7"), servingUsages)
	cache := csrs{
		"csr-own": own,
		// Not to be queued when n1 changes: another node's, another
		// signer's, one approved already, one signed already.
		"csr-n2":     newCSR(t, "csr-n2", kubeletServing, "system:node:n2", nodesGroup, servingOf("n2"), servingUsages),
		"csr-client": newCSR(t, "csr-client", certificatesv1.KubeAPIServerClientKubeletSignerName, "system:node:n1", nodesGroup, clientOf("n1"), clientUsages),
		"csr-done":   withCondition(newCSR(t, "csr-done", kubeletServing, "system:node:n1", nodesGroup, servingOf("n1"), servingUsages), certificatesv1.CertificateApproved),
	}
	signed := newCSR(t, "csr-signed", kubeletServing, "system:node:n1", nodesGroup, servingOf("n1"), servingUsages)
	signed.Status.Certificate = []byte("cert")
	cache["csr-signed"] = signed

	client := fake.NewClientset(own.DeepCopy())
	known := nodes{}
	a := &approver{client: client, csrs: cache, nodes: known, now: time.Now, log: slog.New(slog.DiscardHandler)}
	var queued []string
	handler := requeueServingCSRs(cache, func(r controllers.Request) { queued = append(queued, r.Name) })
	reconcile := func(name string) {
		t.Helper()
		if _, err := a.Reconcile(context.Background(), controllers.Request{Name: name}); err != nil {
			t.Fatalf("Reconcile(%s): %v", name, err)
		}
	}

	// The CSR comes before the Node.
	reconcile("csr-own")
	if got := approvals(t, client); len(got) != 0 {
		t.Fatalf("approved %v before the Node was known", got)
	}

	// The Node is registered without addresses: looked at again, still
	// pending.
	bare := nodeAt("n1")
	known["n1"] = bare
	handler.OnAdd(bare)
	if !slices.Equal(queued, []string{"csr-own"}) {
		t.Fatalf("queued %v when the Node appeared, want [csr-own]", queued)
	}
	queued = nil
	reconcile("csr-own")
	if got := approvals(t, client); len(got) != 0 {
		t.Fatalf("approved %v before the Node had the CSR's address", got)
	}

	// A heartbeat that changes no address queues nothing.
	beat := bare.DeepCopy()
	beat.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	known["n1"] = beat
	handler.OnUpdate(bare, beat)
	if len(queued) != 0 {
		t.Fatalf("queued %v on an update that changed no address", queued)
	}

	// The kubelet posts its addresses: looked at again, approved.
	addressed := beat.DeepCopy()
	addressed.Status.Addresses = nodeAt("n1", "InternalIP", "10.0.0.7", "Hostname", "n1").Status.Addresses
	known["n1"] = addressed
	handler.OnUpdate(beat, addressed)
	if !slices.Equal(queued, []string{"csr-own"}) {
		t.Fatalf("queued %v when the Node's addresses changed, want [csr-own]", queued)
	}
	reconcile("csr-own")
	if got := approvals(t, client); !slices.Equal(got, []string{"csr-own"}) {
		t.Fatalf("approved %v once the Node had the CSR's names, want [csr-own]", got)
	}
}
