// Package printers renders objects as the metav1.Table that `kubectl get`
// asks the server for (Accept: application/json;as=Table;v=v1;g=meta.k8s.io).
//
// For picks the columns and the cell function for a kind, with the column
// names and cell text kubectl users know from an upstream API server; kinds
// without a printer get NAME and AGE. Table turns a list of objects into
// the Table, attaching to each row nothing, the object itself or its
// metadata as the request's includeObject asks. The caller owns the request:
// it sets the list metadata (resourceVersion, continue) on the returned
// Table and encodes it.
//
// Everything here is a pure function of its arguments; the current time is
// passed in so that AGE and "ago" cells are reproducible in tests.
package printers
