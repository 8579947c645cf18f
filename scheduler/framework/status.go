package framework

import (
	"errors"
	"strings"
)

// Code tells the caller of a plugin what to do next.
type Code int

const (
	// Success: the plugin ran and the pod passes. A nil *Status means Success.
	Success Code = iota
	// Error: an internal error; the cycle stops and the pod is retried.
	Error
	// Unschedulable: the pod does not fit now; preemption may help.
	Unschedulable
	// UnschedulableAndUnresolvable: the pod does not fit and preemption on
	// this node cannot change that (a taint, a node selector, a request
	// bigger than the whole node).
	UnschedulableAndUnresolvable
	// Skip: returned by PreFilter or PreScore when the plugin has nothing to
	// do for this pod; its Filter or Score is then not called.
	Skip
)

var codeNames = [...]string{"Success", "Error", "Unschedulable", "UnschedulableAndUnresolvable", "Skip"}

func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "Unknown"
}

// Status is the result of a plugin call: a code, reasons for the user (one
// per failed check, e.g. "Insufficient cpu"), an optional error, and the
// plugin that returned it. A nil *Status is Success.
type Status struct {
	code    Code
	reasons []string
	err     error
	plugin  string
}

// NewStatus returns a status with the code and reasons.
func NewStatus(code Code, reasons ...string) *Status {
	return &Status{code: code, reasons: reasons}
}

// AsStatus wraps an error as an Error status; nil stays nil.
func AsStatus(err error) *Status {
	if err == nil {
		return nil
	}
	return &Status{code: Error, err: err}
}

// Code returns the status code; Success for nil.
func (s *Status) Code() Code {
	if s == nil {
		return Success
	}
	return s.code
}

// IsSuccess reports whether the status is nil or Success.
func (s *Status) IsSuccess() bool { return s.Code() == Success }

// IsSkip reports whether the code is Skip.
func (s *Status) IsSkip() bool { return s.Code() == Skip }

// IsRejected reports whether the pod was found not to fit (Unschedulable or
// UnschedulableAndUnresolvable), as opposed to an error.
func (s *Status) IsRejected() bool {
	c := s.Code()
	return c == Unschedulable || c == UnschedulableAndUnresolvable
}

// Reasons returns the reasons, with the error's text first if there is one.
func (s *Status) Reasons() []string {
	if s == nil {
		return nil
	}
	if s.err != nil {
		return append([]string{s.err.Error()}, s.reasons...)
	}
	return s.reasons
}

// Message joins the reasons with ", ".
func (s *Status) Message() string {
	return strings.Join(s.Reasons(), ", ")
}

// Plugin names the plugin that returned the status, if the framework set it.
func (s *Status) Plugin() string {
	if s == nil {
		return ""
	}
	return s.plugin
}

// WithPlugin records the plugin that returned the status and returns s.
func (s *Status) WithPlugin(name string) *Status {
	if s != nil {
		s.plugin = name
	}
	return s
}

// Err returns the wrapped error, or for a non-success status without one an
// error carrying the message; nil for success.
func (s *Status) Err() error {
	if s.IsSuccess() {
		return nil
	}
	if s.err != nil {
		return s.err
	}
	return errors.New(s.Message())
}

func (s *Status) String() string {
	if s == nil {
		return "Success"
	}
	var b strings.Builder
	b.WriteString(s.code.String())
	if s.plugin != "" {
		b.WriteString(" (" + s.plugin + ")")
	}
	if m := s.Message(); m != "" {
		b.WriteString(": " + m)
	}
	return b.String()
}
