package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebus/kubebus/apiserver/storage"
)

func statusError(code int32, reason metav1.StatusReason, msg string) *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: code, Reason: reason, Message: msg,
	}}
}

func errUnsupportedMediaType(ct string) error {
	return statusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
		fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (got %q)", ct))
}

func errNotAcceptable(accept string) error {
	return statusError(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
		fmt.Sprintf("only the following media types are accepted: application/json, application/yaml, application/json;as=Table;v=v1;g=meta.k8s.io (got %q)", accept))
}

func errMethodNotAllowed(method, what string) error {
	return apierrors.NewMethodNotSupported(schema.GroupResource{Resource: what}, method)
}

// storageError turns a storage error about one object into an API error.
func storageError(err error, gr schema.GroupResource, name string) error {
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return apierrors.NewNotFound(gr, name)
	case errors.Is(err, storage.ErrExists):
		return apierrors.NewAlreadyExists(gr, name)
	case errors.Is(err, storage.ErrConflict):
		return apierrors.NewConflict(gr, name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	case errors.Is(err, storage.ErrCompacted):
		return apierrors.NewResourceExpired("too old resource version")
	case errors.Is(err, context.Canceled):
		return statusError(499, metav1.StatusReasonUnknown, "client closed the request")
	case errors.Is(err, storage.ErrUncertain) && errors.Is(err, context.DeadlineExceeded):
		return apierrors.NewTimeoutError("request did not complete within the allowed duration", 0)
	case errors.Is(err, storage.ErrUncertain):
		// Not 503: client-go repeats a write that carries Retry-After, and
		// a repeated create with generateName would make a second object.
		return apierrors.NewInternalError(err)
	case errors.Is(err, context.DeadlineExceeded):
		return apierrors.NewTimeoutError("request did not complete within the allowed duration", 1)
	}
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return err
	}
	var te *storage.TransformError
	if errors.As(err, &te) {
		return apierrors.NewInternalError(te)
	}
	return apierrors.NewServiceUnavailable(fmt.Sprintf("storage: %v", err))
}

// writeError sends err as a metav1.Status.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var st metav1.Status
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		st = se.Status()
	} else {
		st = apierrors.NewInternalError(err).Status()
	}
	if st.Code == 0 {
		st.Code = http.StatusInternalServerError
	}
	if st.Code >= 500 {
		s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "code", st.Code, "err", err)
	}
	st.Kind, st.APIVersion = "Status", "v1"
	if st.Code == http.StatusTooManyRequests || st.Code == http.StatusServiceUnavailable {
		retry := int32(1)
		if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
			retry = st.Details.RetryAfterSeconds
		}
		w.Header().Set("Retry-After", strconv.Itoa(int(retry)))
	}
	// In the negotiated encoding, as upstream; JSON when nothing is
	// acceptable, and JSON for protobuf clients (they decode by Content-Type).
	out, nerr := negotiate(r)
	if nerr != nil || out.protobuf {
		out = output{pretty: prettyPrint(r)}
	}
	out.kind = outObject
	writeOut(w, out, int(st.Code), &st)
}

var _ = slog.LevelInfo
