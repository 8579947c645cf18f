package apiserver

import (
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// selfSubjectReview is the caller's identity, as `kubectl auth whoami`
// shows it: name, uid, groups and extra.
func selfSubjectReview(u auth.User) *authnv1.SelfSubjectReview {
	return &authnv1.SelfSubjectReview{
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(time.Now())},
		Status:     authnv1.SelfSubjectReviewStatus{UserInfo: userInfo(u.WithAuthenticated())},
	}
}
