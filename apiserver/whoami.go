package apiserver

import (
	"net/http"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// serveSelfSubjectReview answers POST
// /apis/authentication.k8s.io/v1/selfsubjectreviews with the caller's
// identity, as `kubectl auth whoami` expects.
func (s *Server) serveSelfSubjectReview(w http.ResponseWriter, r *http.Request) {
	u := auth.UserFrom(r.Context())
	writeJSON(w, http.StatusCreated, &authnv1.SelfSubjectReview{
		TypeMeta:   metav1.TypeMeta{Kind: "SelfSubjectReview", APIVersion: "authentication.k8s.io/v1"},
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.Now()},
		Status:     authnv1.SelfSubjectReviewStatus{UserInfo: authnv1.UserInfo{Username: u.Name, Groups: append(u.Groups, "system:authenticated")}},
	})
}
