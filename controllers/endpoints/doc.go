// Package endpoints is the Endpoints controller: for every Service with a
// selector it keeps a core/v1 Endpoints of the same name that lists the
// matching pods that have an IP, ready pods under addresses and the others
// under notReadyAddresses, with the service's ports resolved against each
// pod's containers.
package endpoints
