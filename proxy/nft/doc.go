// Package nft writes a proxy/rules ruleset to the kernel through netlink
// (github.com/google/nftables): the first Apply replaces the proxy's table
// whole, later ones change only what differs from the last ruleset applied,
// and every Apply is one atomic transaction.
package nft
