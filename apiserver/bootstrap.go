package apiserver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SystemNamespaces exist in every cluster.
var SystemNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// Bootstrap creates the system namespaces that are missing. Several API
// servers may race here; AlreadyExists is success.
func (s *Server) Bootstrap(ctx context.Context) error {
	res, ok := s.byGVR[schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}]
	if !ok {
		return nil
	}
	for _, name := range SystemNamespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := s.createObject(ctx, res, ns, false); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", name, err)
		}
	}
	return nil
}
