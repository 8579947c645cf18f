package server

import (
	"errors"
	"fmt"
	"net/http"
)

// ErrNotFound matches, with errors.Is, every *Error whose code is 404.
var ErrNotFound = errors.New("kubelet server: not found")

// Error is an error a LogLocator returns to have the server answer with
// Code and Message (sent to the client as is).
type Error struct {
	Code    int
	Message string
}

func (e *Error) Error() string { return e.Message }

// Is makes errors.Is(err, ErrNotFound) true for a 404.
func (e *Error) Is(target error) bool { return target == ErrNotFound && e.Code == http.StatusNotFound }

// PodNotFound says the kubelet runs no such pod.
func PodNotFound(namespace, pod string) error {
	return &Error{Code: http.StatusNotFound, Message: fmt.Sprintf("pod %q does not exist in namespace %q on this node", pod, namespace)}
}

// ContainerNotFound says the pod has no such container, or it has not
// been created yet.
func ContainerNotFound(pod, container string) error {
	return &Error{Code: http.StatusNotFound, Message: fmt.Sprintf("container %q in pod %q is not available", container, pod)}
}

// PreviousNotFound says the container has no terminated instance before the
// current one, in the upstream kubelet's words.
func PreviousNotFound(pod, container string) error {
	return &Error{Code: http.StatusNotFound, Message: fmt.Sprintf("previous terminated container %q in pod %q not found", container, pod)}
}

// ContainerWaiting says the container has not started yet (reason is, for
// example, "ContainerCreating"), in the upstream kubelet's words.
func ContainerWaiting(pod, container, reason string) error {
	return &Error{Code: http.StatusBadRequest, Message: fmt.Sprintf("container %q in pod %q is waiting to start: %s", container, pod, reason)}
}
