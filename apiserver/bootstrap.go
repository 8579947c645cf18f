package apiserver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// SystemNamespaces exist in every cluster.
var SystemNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// SystemPriorityClasses exist in every cluster, as upstream's
// system-node-critical and system-cluster-critical.
func SystemPriorityClasses() []*schedulingv1.PriorityClass {
	return []*schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "system-node-critical"}, Value: 2000001000,
			Description: "Used for system critical pods that must not be moved from their current node."},
		{ObjectMeta: metav1.ObjectMeta{Name: "system-cluster-critical"}, Value: 2000000000,
			Description: "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."},
	}
}

// Bootstrap creates the system namespaces and priority classes that are
// missing. Several API servers may race here; AlreadyExists is success.
func (s *Server) Bootstrap(ctx context.Context) error {
	ctx = auth.WithUser(ctx, auth.APIServer)
	if res, ok := s.table.get(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}); ok {
		for _, name := range SystemNamespaces {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
			if _, err := s.createObject(ctx, res, ns, false); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating namespace %s: %w", name, err)
			}
		}
	}
	if res, ok := s.table.get(schedulingv1.SchemeGroupVersion.WithResource("priorityclasses")); ok {
		for _, pc := range SystemPriorityClasses() {
			if _, err := s.createObject(ctx, res, pc, false); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating priority class %s: %w", pc.Name, err)
			}
		}
	}
	return nil
}
