// Package e2e holds end-to-end scenarios that start the real kubebus binary
// and drive it with the stock kubectl and client-go, asserting the behaviour
// an upstream Kubernetes API server would show. Every test is named
// TestIntegration... and skips under -short; the manifests live in testdata.
package e2e

import "github.com/kubebus/kubebus/test/harness"

// apiOnly starts `kubebus server` without its controller-manager and
// scheduler: the API server's tests check the API's own semantics, which
// components acting on the same objects (creating ReplicaSets, writing
// status, binding pods) would blur. Without the controller-manager no
// namespace gets its default ServiceAccount, so the ServiceAccount
// admission plugin, which requires one for every pod, is off too, as
// upstream's API integration tests run.
var apiOnly = []string{"--disable-controller-manager", "--disable-scheduler", noServiceAccounts}

// noServiceAccounts goes with --disable-controller-manager wherever a test
// creates pods.
const noServiceAccounts = harness.NoServiceAccounts
