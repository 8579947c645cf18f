// Package busauth decides what each bus identity may do on NATS: a pure
// function from the identity in a verified client certificate (its common
// name and organizations, read as the API server reads them) to the
// subjects it may publish and subscribe to. The embedded NATS server
// (bus/natsserver) applies it to every connection.
//
// There are four roles:
//
//   - The publisher (PublisherUser, the API server): it writes every
//     object subject (kube.>, knode.>, kstate.>, kstatenode.>, kbus.>),
//     manages the streams and consumers ($JS.API.>) and acks what its
//     own informers read ($JS.ACK.>).
//   - Readers (the controller-manager, the all-in-one's shared
//     informers, system:masters for the tap and tools): they may only read
//     the three streams, through the JetStream API: stream info, consumer
//     create/info/delete/next/list/names, message get and direct get, and
//     acks. They cannot publish an object subject nor create, update,
//     purge or delete a stream.
//   - Components (the scheduler, kube-proxy, the cluster DNS): readers
//     narrowed to the resources their informers follow (Grants), as their
//     RBAC roles narrow them on the API. Each informer's consumers are
//     named bus.DurableName(component, group, resource, "", instance),
//     where the instance is what follows the component's prefix in the
//     connection's name (kube-proxy connects as "kube-proxy-NODE"). They
//     may create those consumers only through the create API whose
//     subject carries the filter (the resource's subjects on KUBE_HISTORY
//     and KUBE_STATE), pull from, inspect, delete and ack only those,
//     direct-get the last message of their resources and the last gap,
//     and read the info of KUBE_HISTORY and KUBE_STATE. They cannot read
//     a message by its sequence, nor another component's consumer.
//   - A node (system:node:NAME in system:nodes, a kubelet): only its own
//     pods. It may create exactly one consumer on KUBE_NODEPODS and one on
//     KUBE_STATE, both named NodeConsumer(NAME), through the create API
//     whose subject carries the filter (so the server checks that the
//     filter is knode.NAME.> or kstatenode.NAME.>), pull from, inspect,
//     delete and ack only those, direct-get the last message of its own
//     node subjects and the last gap event on KUBE_NODEPODS, and read the
//     info of KUBE_NODEPODS and KUBE_STATE.
//
// Everyone subscribes only under its own inbox prefix (bus.InboxPrefix),
// so replies and pulled messages of one identity are not readable by
// another. Any other identity is refused.
package busauth

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/kubebus/kubebus/bus"
)

// Identities the bus knows by name.
const (
	// PublisherUser is the API server's bus identity.
	PublisherUser = "system:kubebus:publisher"
	// RouteUser is the identity a NATS server presents on a cluster
	// route; no client connection is ever it, and no other certificate
	// may open a route.
	RouteUser = "system:kubebus:nats-route"
	// InformersUser is the identity of the informers the components of
	// `kubebus server` share.
	InformersUser = "system:kubebus:informers"
	// ControllerManagerUser, SchedulerUser, ProxyUser and KubeDNSUser
	// are the components' own (Kubernetes) identities.
	ControllerManagerUser = "system:kube-controller-manager"
	SchedulerUser         = "system:kube-scheduler"
	ProxyUser             = "system:kube-proxy"
	KubeDNSUser           = "system:kube-dns"
	// MastersGroup members (the admin) read the bus: the tap, tools.
	MastersGroup = "system:masters"
	// NodeUserPrefix and NodesGroup make a kubelet's identity:
	// system:node:NAME in system:nodes.
	NodeUserPrefix = "system:node:"
	NodesGroup     = "system:nodes"
)

// Identity is who a verified client certificate names, with the name
// the connection gave itself (which tells a component's instance).
type Identity struct {
	User   string
	Groups []string
	// Conn is the NATS connection's name (bus.Connect's name).
	Conn string
}

// Role is what an identity may do on the bus.
type Role int

// The roles.
const (
	RoleNone Role = iota
	RolePublisher
	RoleReader
	RoleNode
	RoleComponent
)

func (r Role) String() string {
	switch r {
	case RolePublisher:
		return "publisher"
	case RoleReader:
		return "reader"
	case RoleNode:
		return "node"
	case RoleComponent:
		return "component"
	}
	return "none"
}

// ErrUnknownIdentity: the identity has no role on the bus.
var ErrUnknownIdentity = errors.New("busauth: identity has no role on the bus")

// readers are the users that read the whole bus without being in
// system:masters.
var readers = []string{InformersUser, ControllerManagerUser}

// Grant is one informer a component may run: its component name (the
// first part of its consumers' names) and the resource it follows.
type Grant struct {
	Component, Group, Resource string
}

// component is what a narrowed component's identity may read.
type component struct {
	// connPrefix starts the names its connections give themselves; the
	// rest is the instance its consumers are named with.
	connPrefix string
	grants     []Grant
}

// components are the narrowed readers: the informers each runs, which
// its package's tests check against its informers.
var components = map[string]component{
	ProxyUser: {connPrefix: "kube-proxy-", grants: []Grant{
		{"kube-proxy", "", "services"},
		{"kube-proxy", "discovery.k8s.io", "endpointslices"},
		{"kube-proxy-routes", "", "nodes"},
	}},
	KubeDNSUser: {connPrefix: "kube-dns-", grants: []Grant{
		{"kube-dns", "", "services"},
		{"kube-dns", "discovery.k8s.io", "endpointslices"},
	}},
	SchedulerUser: {connPrefix: "kube-scheduler-", grants: []Grant{
		{"kube-scheduler", "", "nodes"},
		{"kube-scheduler", "", "pods"},
		{"kube-scheduler", "", "namespaces"},
		{"kube-scheduler", "", "persistentvolumeclaims"},
		{"kube-scheduler", "", "persistentvolumes"},
		{"kube-scheduler", "storage.k8s.io", "storageclasses"},
	}},
}

// Grants returns the informers a component's identity may run and the
// prefix of its connections' names, or false when user is not a narrowed
// component.
func Grants(user string) (connPrefix string, grants []Grant, ok bool) {
	c, ok := components[user]
	return c.connPrefix, slices.Clone(c.grants), ok
}

// RoleOf returns an identity's role and, for a node, its name.
func RoleOf(id Identity) (Role, string) {
	switch {
	case id.User == PublisherUser:
		return RolePublisher, ""
	case strings.HasPrefix(id.User, NodeUserPrefix):
		name := strings.TrimPrefix(id.User, NodeUserPrefix)
		if name == "" || !slices.Contains(id.Groups, NodesGroup) {
			return RoleNone, ""
		}
		return RoleNode, name
	case slices.Contains(readers, id.User), slices.Contains(id.Groups, MastersGroup):
		return RoleReader, ""
	}
	if _, ok := components[id.User]; ok {
		return RoleComponent, ""
	}
	return RoleNone, ""
}

// NodeConsumer is the name of a node's consumers (its live consumer on
// KUBE_NODEPODS and its snapshot consumer on KUBE_STATE): the durable name
// bus/informer gives a node informer of component "kubelet" without an
// instance, "kubelet-core-pods-<escaped node>".
func NodeConsumer(node string) string { return "kubelet-core-pods-" + bus.Escape(node) }

// streams are the streams readers read.
var streams = []string{bus.HistoryStream, bus.NodePodsStream, bus.StateStream}

// Permissions returns what id may publish and subscribe to, or
// ErrUnknownIdentity. Every list is an allow-list: what it does not name
// is refused.
func Permissions(id Identity) (*server.Permissions, error) {
	role, node := RoleOf(id)
	var pub []string
	switch role {
	case RolePublisher:
		pub = []string{"kube.>", "knode.>", "kstate.>", "kstatenode.>", "kbus.>", "$JS.API.>", "$JS.ACK.>"}
	case RoleReader:
		pub = readerSubjects()
	case RoleNode:
		pub = nodeSubjects(node)
	case RoleComponent:
		pub = componentSubjects(components[id.User], id.Conn)
	default:
		return nil, fmt.Errorf("%w: user %q, groups %q", ErrUnknownIdentity, id.User, id.Groups)
	}
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: pub},
		Subscribe: &server.SubjectPermission{Allow: []string{bus.InboxPrefix(id.User) + ".>"}},
	}, nil
}

const api = "$JS.API."

// readerSubjects are the JetStream API calls that read the streams.
func readerSubjects() []string {
	var s []string
	for _, st := range streams {
		s = append(s,
			api+"STREAM.INFO."+st,
			api+"STREAM.MSG.GET."+st,
			api+"DIRECT.GET."+st,
			api+"DIRECT.GET."+st+".>",
			api+"CONSUMER.CREATE."+st+".>", // with or without the filter in the subject
			api+"CONSUMER.DURABLE.CREATE."+st+".*",
			api+"CONSUMER.INFO."+st+".*",
			api+"CONSUMER.DELETE."+st+".*",
			api+"CONSUMER.MSG.NEXT."+st+".*",
			api+"CONSUMER.LIST."+st,
			api+"CONSUMER.NAMES."+st,
			"$JS.ACK."+st+".>",
		)
	}
	return s
}

// nodeSubjects are the calls of a node's pod informer, for its node only.
func nodeSubjects(node string) []string {
	c := NodeConsumer(node)
	s := []string{
		api + "STREAM.INFO." + bus.NodePodsStream,
		api + "STREAM.INFO." + bus.StateStream,
		// The server rejects a create whose config's filter differs
		// from the one in the subject.
		api + "CONSUMER.CREATE." + bus.NodePodsStream + "." + c + "." + bus.NodeFilter(node),
		api + "CONSUMER.CREATE." + bus.StateStream + "." + c + "." + bus.StateNodeFilter(node),
		// Last message of its own chain (eviction checks, the start) and
		// the last gap announced to the kubelets; the subject carries what
		// is read.
		api + "DIRECT.GET." + bus.NodePodsStream + "." + bus.NodeFilter(node),
		api + "DIRECT.GET." + bus.NodePodsStream + "." + bus.NodeGapSubject,
		"$JS.ACK." + bus.NodePodsStream + "." + c + ".>",
	}
	return append(s, ownConsumer(c, bus.NodePodsStream, bus.StateStream)...)
}

// ownConsumer are the calls on the durable consumer name in each stream
// that an informer makes once it has created it: its info, the next
// messages, its deletion.
func ownConsumer(name string, streams ...string) []string {
	var s []string
	for _, st := range streams {
		for _, op := range []string{"INFO", "DELETE", "MSG.NEXT"} {
			s = append(s, api+"CONSUMER."+op+"."+st+"."+name)
		}
	}
	return s
}

// componentSubjects are the calls of a narrowed component's informers
// (bus/informer with Narrow set), for the instance its connection names.
// A connection whose name lacks the prefix gets the names of the empty
// instance.
func componentSubjects(c component, conn string) []string {
	instance := strings.TrimPrefix(conn, c.connPrefix)
	if instance == conn {
		instance = ""
	}
	s := []string{
		api + "STREAM.INFO." + bus.HistoryStream,
		api + "STREAM.INFO." + bus.StateStream,
		api + "DIRECT.GET." + bus.HistoryStream + "." + bus.GapSubject,
	}
	for _, g := range c.grants {
		d := bus.DurableName(g.Component, g.Group, g.Resource, "", instance)
		live := bus.ResourceFilter(g.Group, g.Resource, "")
		s = append(s,
			// The server rejects a create whose config's filter differs
			// from the one in the subject.
			api+"CONSUMER.CREATE."+bus.HistoryStream+"."+d+"."+live,
			api+"CONSUMER.CREATE."+bus.StateStream+"."+d+"."+bus.StateFilter(g.Group, g.Resource, ""),
			// The last message of the resource: the subject carries what
			// is read.
			api+"DIRECT.GET."+bus.HistoryStream+"."+live,
			"$JS.ACK."+bus.HistoryStream+"."+d+".>",
		)
		s = append(s, ownConsumer(d, bus.HistoryStream, bus.StateStream)...)
	}
	return s
}
