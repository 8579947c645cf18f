// Package certificates holds the controllers of certificates.k8s.io
// CertificateSigningRequests, as upstream's kube-controller-manager runs
// them:
//
//   - the approver ("csrapproving") approves a kubelet's client CSR
//     (signer kubernetes.io/kube-apiserver-client-kubelet) when a
//     SubjectAccessReview lets the requester create
//     certificatesigningrequests/selfnodeclient (its own node) or
//     /nodeclient (any node), and a kubelet's serving CSR (signer
//     kubernetes.io/kubelet-serving) that the node named in it asked for
//     and whose every DNS name and IP address is that node's: its name
//     or one of its Node's status.addresses (ValidateKubeletServingNames).
//     A serving CSR naming anything else, or whose Node the controller
//     does not know, is left pending (for an admin); the Node's appearing
//     or a change of its addresses has it looked at again;
//   - the signer ("csrsigning") issues the certificate of an approved CSR
//     of the kubernetes.io/kube-apiserver-client,
//     kubernetes.io/kube-apiserver-client-kubelet and
//     kubernetes.io/kubelet-serving signers from the cluster CA, and marks
//     Failed a CSR those signers cannot honour.
//
// The signer is the only part of the cluster besides the CA's creator
// that reads the CA's private key: give the controller-manager that key
// (--cluster-signing-key-file) and nothing else.
//
// Both read the CSRs' cache, the approver the Nodes' too (their
// constructors add handlers, so call them before the caches run), and
// write through the approval and status subresources. The checks of a
// CSR's content (ValidateKubeletClient, ValidateKubeletServing,
// ValidateKubeletServingNames, ValidateAPIServerClient) and the signing
// (CA.Sign) are pure.
package certificates
