package apiserver

import (
	"context"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubebus/kubebus/apiserver/resource"
	"github.com/kubebus/kubebus/apiserver/storage"
)

// getObject reads and decodes one object.
func (s *Server) getObject(ctx context.Context, res *resource.Resource, ns, name string) (runtime.Object, storage.KV, error) {
	return s.readObject(ctx, res, keyFor(res, ns, name), name, false)
}

func (s *Server) get(w http.ResponseWriter, r *http.Request, ri RequestInfo, res *resource.Resource) error {
	out, err := negotiate(r)
	if err != nil {
		return err
	}
	obj, _, err := s.getObject(r.Context(), res, ri.Namespace, ri.Name)
	if err != nil {
		return err
	}
	v, err := render(res, out, []runtime.Object{obj}, nil, listMetaOf(obj))
	if err != nil {
		return err
	}
	writeOut(w, out, http.StatusOK, v)
	return nil
}
