// Package serviceaccount issues and verifies ServiceAccount tokens, as
// upstream's pkg/serviceaccount, the TokenRequest subresource and the
// service account issuer's OIDC discovery documents.
//
// LoadOrCreateKey keeps the RSA signing key in the data directory. An
// Issuer signs RS256 JWTs for TokenRequest (serviceaccounts/NAME/token); the
// caller fetches the ServiceAccount and the object BoundRef names and checks
// the requester may create the token. An Authenticator verifies bearer JWTs
// of our issuers and, as upstream's validator, looks the ServiceAccount and
// the bound pod, secret or node up through a Getter (the caller's informer
// caches), so a token dies with the object it is bound to. Successful
// verifications are cached for a few seconds (ten by default): a token
// whose pod, secret or ServiceAccount is deleted keeps authenticating for at
// most that long, as with upstream's token cache. DiscoveryHandlers serve
// /.well-known/openid-configuration and /openid/v1/jwks.
//
// No error this package returns carries a token or key material.
package serviceaccount
