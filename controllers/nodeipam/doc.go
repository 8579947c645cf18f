// Package nodeipam is the node IPAM controller: it gives each node that has
// no spec.podCIDR a subnet of the cluster CIDR that no other node uses, and
// never changes a node's subnet once it is set.
package nodeipam
