package busauth

import (
	"errors"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/kubebus/kubebus/bus"
)

// allowed reports whether an allow-list lets subject through, as the
// server matches it (a literal subject, or a wildcard one only when it is
// a subset of an allowed subject).
func allowed(p *server.SubjectPermission, subject string) bool {
	for _, a := range p.Allow {
		if server.SubjectMatchesFilter(subject, a) {
			return true
		}
	}
	return false
}

var (
	publisher = Identity{User: PublisherUser}
	kcm       = Identity{User: ControllerManagerUser}
	sched     = Identity{User: SchedulerUser}
	proxy     = Identity{User: ProxyUser}
	informers = Identity{User: InformersUser}
	kubeDNS   = Identity{User: KubeDNSUser}
	proxyN1   = Identity{User: ProxyUser, Conn: "kube-proxy-n1"}
	schedDots = Identity{User: SchedulerUser, Conn: "kube-scheduler-s1.example.com"}
	admin     = Identity{User: "kubebus-admin", Groups: []string{MastersGroup}}
	nodeA     = Identity{User: "system:node:a", Groups: []string{NodesGroup}}
	nodeDots  = Identity{User: "system:node:n1.example.com", Groups: []string{NodesGroup}}
)

func TestRoleOf(t *testing.T) {
	for _, tc := range []struct {
		id   Identity
		role Role
		node string
	}{
		{publisher, RolePublisher, ""},
		{kcm, RoleReader, ""},
		{sched, RoleComponent, ""},
		{proxy, RoleComponent, ""},
		{informers, RoleReader, ""},
		{kubeDNS, RoleComponent, ""},
		// A component in system:masters (the admin's group) reads it all.
		{Identity{User: ProxyUser, Groups: []string{MastersGroup}}, RoleReader, ""},
		{Identity{User: "system:kube-dns-evil"}, RoleNone, ""},
		{admin, RoleReader, ""},
		{nodeA, RoleNode, "a"},
		{nodeDots, RoleNode, "n1.example.com"},
		// A node name without the nodes group, or the group without a
		// name, is not a node.
		{Identity{User: "system:node:a"}, RoleNone, ""},
		{Identity{User: "system:node:", Groups: []string{NodesGroup}}, RoleNone, ""},
		// Groups do not make a publisher; a random user is nobody.
		{Identity{User: "alice", Groups: []string{"system:authenticated"}}, RoleNone, ""},
		{Identity{User: "alice", Groups: []string{PublisherUser}}, RoleNone, ""},
		{Identity{User: "system:kube-controller-manager-evil"}, RoleNone, ""},
		{Identity{}, RoleNone, ""},
	} {
		role, node := RoleOf(tc.id)
		if role != tc.role || node != tc.node {
			t.Errorf("RoleOf(%+v) = %s %q, want %s %q", tc.id, role, node, tc.role, tc.node)
		}
	}
}

func TestUnknownIdentityRefused(t *testing.T) {
	for _, id := range []Identity{{User: "alice"}, {User: "system:node:a"}, {}} {
		if p, err := Permissions(id); !errors.Is(err, ErrUnknownIdentity) || p != nil {
			t.Errorf("Permissions(%+v) = %v, %v; want ErrUnknownIdentity", id, p, err)
		}
	}
}

func TestPublish(t *testing.T) {
	const (
		nodeCons  = "kubelet-core-pods-a"
		otherCons = "kubelet-core-pods-b"
	)
	for _, tc := range []struct {
		name    string
		id      Identity
		subject string
		want    bool
	}{
		// The publisher writes every object subject and manages streams.
		{"publisher history", publisher, "kube.core.pods.default.p", true},
		{"publisher node", publisher, "knode.a.default.p", true},
		{"publisher state", publisher, "kstate.core.pods.default.p", true},
		{"publisher state node", publisher, "kstatenode.a.default.p", true},
		{"publisher gap", publisher, "kbus.gap", true},
		{"publisher stream create", publisher, "$JS.API.STREAM.CREATE.KUBE_HISTORY", true},
		{"publisher stream update", publisher, "$JS.API.STREAM.UPDATE.KUBE_STATE", true},
		{"publisher purge", publisher, "$JS.API.STREAM.PURGE.KUBE_STATE", true},
		{"publisher ack", publisher, "$JS.ACK.KUBE_HISTORY.apiserver-core-nodes.1.2.3.4.5.6", true},
		{"publisher other subject", publisher, "foo", false},
		{"publisher system", publisher, "$SYS.REQ.SERVER.PING", false},

		// Readers read.
		{"kcm stream info", kcm, "$JS.API.STREAM.INFO.KUBE_HISTORY", true},
		{"kcm state info", kcm, "$JS.API.STREAM.INFO.KUBE_STATE", true},
		{"kcm consumer create", kcm, "$JS.API.CONSUMER.CREATE.KUBE_HISTORY.kcm-core-pods", true},
		{"kcm consumer create filtered", kcm, "$JS.API.CONSUMER.CREATE.KUBE_STATE.snap.kstate.core.pods.>", true},
		{"kcm durable create", kcm, "$JS.API.CONSUMER.DURABLE.CREATE.KUBE_HISTORY.kcm-core-pods", true},
		{"kcm consumer info", kcm, "$JS.API.CONSUMER.INFO.KUBE_HISTORY.kcm-core-pods", true},
		{"kcm consumer delete", kcm, "$JS.API.CONSUMER.DELETE.KUBE_HISTORY.kcm-core-pods", true},
		{"kcm next", kcm, "$JS.API.CONSUMER.MSG.NEXT.KUBE_HISTORY.kcm-core-pods", true},
		{"kcm msg get", kcm, "$JS.API.STREAM.MSG.GET.KUBE_HISTORY", true},
		{"kcm direct get", kcm, "$JS.API.DIRECT.GET.KUBE_HISTORY", true},
		{"kcm direct get last", kcm, "$JS.API.DIRECT.GET.KUBE_HISTORY.kbus.gap", true},
		{"kcm ack", kcm, "$JS.ACK.KUBE_HISTORY.kcm-core-pods.1.2.3.4.5.6", true},
		{"proxy info", proxy, "$JS.API.STREAM.INFO.KUBE_HISTORY", true},
		{"kube-dns next", kubeDNS, "$JS.API.CONSUMER.MSG.NEXT.KUBE_HISTORY.kube-dns_services", true},

		// A component: the consumers of its informers, for the instance its
		// connection names, filtered to its resources.
		{"proxy services create", proxyN1, "$JS.API.CONSUMER.CREATE.KUBE_HISTORY.kube-proxy_services_n1.kube.core.services.>", true},
		{"proxy slices create", proxyN1, "$JS.API.CONSUMER.CREATE.KUBE_HISTORY.kube-proxy_endpointslices-discovery-k8s-io_n1.kube.discovery%2Ek8s%2Eio.endpointslices.>", true},
		{"proxy routes create", proxyN1, "$JS.API.CONSUMER.CREATE.KUBE_HISTORY.kube-proxy-routes_nodes_n1.kube.core.nodes.>", true},
		{"proxy state create", proxyN1, "$JS.API.CONSUMER.CREATE.KUBE_STATE.kube-proxy_services_n1.kstate.core.services.>", true},
		{"proxy next", proxyN1, "$JS.API.CONSUMER.MSG.NEXT.KUBE_HISTORY.kube-proxy_services_n1", true},
		{"proxy state next", proxyN1, "$JS.API.CONSUMER.MSG.NEXT.KUBE_STATE.kube-proxy_services_n1", true},
		{"proxy consumer info", proxyN1, "$JS.API.CONSUMER.INFO.KUBE_HISTORY.kube-proxy_services_n1", true},
		{"proxy consumer delete", proxyN1, "$JS.API.CONSUMER.DELETE.KUBE_STATE.kube-proxy_services_n1", true},
		{"proxy ack", proxyN1, "$JS.ACK.KUBE_HISTORY.kube-proxy_services_n1.1.2.3.4.5.6", true},
		{"proxy last of services", proxyN1, "$JS.API.DIRECT.GET.KUBE_HISTORY.kube.core.services.>", true},
		{"proxy last gap", proxyN1, "$JS.API.DIRECT.GET.KUBE_HISTORY.kbus.gap", true},
		{"proxy state info", proxyN1, "$JS.API.STREAM.INFO.KUBE_STATE", true},
		{"scheduler hashed name", schedDots, "$JS.API.CONSUMER.CREATE.KUBE_HISTORY." + bus.DurableName("kube-scheduler", "", "pods", "", "s1.example.com") + ".kube.core.pods.>", true},
		{"scheduler storage classes", schedDots, "$JS.API.CONSUMER.CREATE.KUBE_STATE." + bus.DurableName("kube-scheduler", "storage.k8s.io", "storageclasses", "", "s1.example.com") + ".kstate.storage%2Ek8s%2Eio.storageclasses.>", true},
		// Not another resource, another instance, another component, an
		// unfiltered consumer or a message by its sequence.
		{"proxy secrets", proxyN1, "$JS.API.CONSUMER.CREATE.KUBE_HISTORY.kube-proxy_services_n1.kube.core.secrets.>", false},
		{"proxy whole history", proxyN1, "$JS.API.CONSUMER.CREATE.KUBE_HISTORY.kube-proxy_services_n1.kube.>", false},
		{"proxy no filter", proxyN1, "$JS.API.CONSUMER.CREATE.KUBE_HISTORY.kube-proxy_services_n1", false},
		{"proxy durable create", proxyN1, "$JS.API.CONSUMER.DURABLE.CREATE.KUBE_HISTORY.kube-proxy_services_n1", false},
		{"proxy other instance", proxyN1, "$JS.API.CONSUMER.MSG.NEXT.KUBE_HISTORY.kube-proxy_services_n2", false},
		{"proxy kcm consumer", proxyN1, "$JS.API.CONSUMER.MSG.NEXT.KUBE_HISTORY.kube-controller-manager_secrets", false},
		{"proxy kcm ack", proxyN1, "$JS.ACK.KUBE_HISTORY.kube-controller-manager_secrets.1.2.3.4.5.6", false},
		{"proxy routes of pods", proxyN1, "$JS.API.CONSUMER.CREATE.KUBE_HISTORY.kube-proxy-routes_nodes_n1.kube.core.pods.>", false},
		{"proxy msg get", proxyN1, "$JS.API.STREAM.MSG.GET.KUBE_HISTORY", false},
		{"proxy direct get by sequence", proxyN1, "$JS.API.DIRECT.GET.KUBE_HISTORY", false},
		{"proxy last secret", proxyN1, "$JS.API.DIRECT.GET.KUBE_HISTORY.kube.core.secrets.default.s", false},
		{"proxy node pods", proxyN1, "$JS.API.STREAM.INFO.KUBE_NODEPODS", false},
		{"proxy list", proxyN1, "$JS.API.CONSUMER.LIST.KUBE_HISTORY", false},
		{"kube-dns durable create", kubeDNS, "$JS.API.CONSUMER.DURABLE.CREATE.KUBE_HISTORY.kube-dns_services", false},
		{"kube-dns pods", kubeDNS, "$JS.API.CONSUMER.CREATE.KUBE_HISTORY.kube-dns_pods.kube.core.pods.>", false},
		{"sched secrets", schedDots, "$JS.API.CONSUMER.CREATE.KUBE_HISTORY." + bus.DurableName("kube-scheduler", "", "secrets", "", "s1.example.com") + ".kube.core.secrets.>", false},
		{"sched any next", sched, "$JS.API.CONSUMER.MSG.NEXT.KUBE_HISTORY.x", false},
		{"kube-dns publish", kubeDNS, "kube.core.services.default.s", false},
		{"kube-dns stream delete", kubeDNS, "$JS.API.STREAM.DELETE.KUBE_HISTORY", false},
		{"informers create", informers, "$JS.API.CONSUMER.CREATE.KUBE_HISTORY.kubebus-server-core-pods-h", true},
		{"admin list", admin, "$JS.API.CONSUMER.LIST.KUBE_HISTORY", true},
		{"admin names", admin, "$JS.API.CONSUMER.NAMES.KUBE_NODEPODS", true},
		{"admin node stream consumer", admin, "$JS.API.CONSUMER.CREATE.KUBE_NODEPODS.kubelet-core-pods-hollow-1-h.knode.hollow-1.>", true},
		// ... and never write.
		{"kcm publish history", kcm, "kube.core.pods.default.p", false},
		{"kcm publish node", kcm, "knode.a.default.p", false},
		{"kcm publish state", kcm, "kstate.core.pods.default.p", false},
		{"kcm publish state node", kcm, "kstatenode.a.default.p", false},
		{"kcm publish gap", kcm, "kbus.gap", false},
		{"kcm stream create", kcm, "$JS.API.STREAM.CREATE.KUBE_HISTORY", false},
		{"kcm stream update", kcm, "$JS.API.STREAM.UPDATE.KUBE_HISTORY", false},
		{"kcm stream delete", kcm, "$JS.API.STREAM.DELETE.KUBE_HISTORY", false},
		{"kcm stream purge", kcm, "$JS.API.STREAM.PURGE.KUBE_HISTORY", false},
		{"kcm msg delete", kcm, "$JS.API.STREAM.MSG.DELETE.KUBE_HISTORY", false},
		{"kcm stream list", kcm, "$JS.API.STREAM.LIST", false},
		{"kcm other stream", kcm, "$JS.API.STREAM.INFO.OTHER", false},
		{"kcm other stream consumer", kcm, "$JS.API.CONSUMER.CREATE.OTHER.x", false},
		{"admin stream delete", admin, "$JS.API.STREAM.DELETE.KUBE_STATE", false},
		{"admin publish", admin, "kube.core.secrets.default.s", false},

		// A node: its own consumers, filtered to its own subjects.
		{"node live create", nodeA, "$JS.API.CONSUMER.CREATE.KUBE_NODEPODS." + nodeCons + ".knode.a.>", true},
		{"node state create", nodeA, "$JS.API.CONSUMER.CREATE.KUBE_STATE." + nodeCons + ".kstatenode.a.>", true},
		{"node live next", nodeA, "$JS.API.CONSUMER.MSG.NEXT.KUBE_NODEPODS." + nodeCons, true},
		{"node live info", nodeA, "$JS.API.CONSUMER.INFO.KUBE_NODEPODS." + nodeCons, true},
		{"node live delete", nodeA, "$JS.API.CONSUMER.DELETE.KUBE_NODEPODS." + nodeCons, true},
		{"node state next", nodeA, "$JS.API.CONSUMER.MSG.NEXT.KUBE_STATE." + nodeCons, true},
		{"node state info", nodeA, "$JS.API.CONSUMER.INFO.KUBE_STATE." + nodeCons, true},
		{"node state delete", nodeA, "$JS.API.CONSUMER.DELETE.KUBE_STATE." + nodeCons, true},
		{"node ack", nodeA, "$JS.ACK.KUBE_NODEPODS." + nodeCons + ".1.2.3.4.5.6", true},
		{"node last own", nodeA, "$JS.API.DIRECT.GET.KUBE_NODEPODS.knode.a.>", true},
		{"node last gap", nodeA, "$JS.API.DIRECT.GET.KUBE_NODEPODS.knode._gap", true},
		{"node stream info", nodeA, "$JS.API.STREAM.INFO.KUBE_NODEPODS", true},
		// Gaps reach a node on KUBE_NODEPODS: it reads nothing of the history.
		{"node history gap", nodeA, "$JS.API.DIRECT.GET.KUBE_HISTORY.kbus.gap", false},
		{"node history info", nodeA, "$JS.API.STREAM.INFO.KUBE_HISTORY", false},
		{"node state stream info", nodeA, "$JS.API.STREAM.INFO.KUBE_STATE", true},
		{"node dotted name", nodeDots, "$JS.API.CONSUMER.CREATE.KUBE_NODEPODS.kubelet-core-pods-n1%2Eexample%2Ecom.knode.n1%2Eexample%2Ecom.>", true},
		// Not another node's, not unfiltered, not the whole stream.
		{"node other filter", nodeA, "$JS.API.CONSUMER.CREATE.KUBE_NODEPODS." + nodeCons + ".knode.b.>", false},
		{"node all nodes filter", nodeA, "$JS.API.CONSUMER.CREATE.KUBE_NODEPODS." + nodeCons + ".knode.>", false},
		{"node wildcard filter", nodeA, "$JS.API.CONSUMER.CREATE.KUBE_NODEPODS." + nodeCons + ".knode.*.>", false},
		{"node no filter", nodeA, "$JS.API.CONSUMER.CREATE.KUBE_NODEPODS." + nodeCons, false},
		{"node durable create", nodeA, "$JS.API.CONSUMER.DURABLE.CREATE.KUBE_NODEPODS." + nodeCons, false},
		{"node other consumer", nodeA, "$JS.API.CONSUMER.CREATE.KUBE_NODEPODS." + otherCons + ".knode.a.>", false},
		{"node other next", nodeA, "$JS.API.CONSUMER.MSG.NEXT.KUBE_NODEPODS." + otherCons, false},
		{"node other delete", nodeA, "$JS.API.CONSUMER.DELETE.KUBE_NODEPODS." + otherCons, false},
		{"node other ack", nodeA, "$JS.ACK.KUBE_NODEPODS." + otherCons + ".1.2.3.4.5.6", false},
		{"node history consumer", nodeA, "$JS.API.CONSUMER.CREATE.KUBE_HISTORY." + nodeCons + ".kube.core.pods.>", false},
		{"node state of objects", nodeA, "$JS.API.CONSUMER.CREATE.KUBE_STATE." + nodeCons + ".kstate.core.secrets.>", false},
		{"node other state", nodeA, "$JS.API.CONSUMER.CREATE.KUBE_STATE." + nodeCons + ".kstatenode.b.>", false},
		{"node msg get", nodeA, "$JS.API.STREAM.MSG.GET.KUBE_NODEPODS", false},
		{"node msg get history", nodeA, "$JS.API.STREAM.MSG.GET.KUBE_HISTORY", false},
		{"node direct get by sequence", nodeA, "$JS.API.DIRECT.GET.KUBE_NODEPODS", false},
		{"node direct get other", nodeA, "$JS.API.DIRECT.GET.KUBE_NODEPODS.knode.b.>", false},
		{"node direct get history", nodeA, "$JS.API.DIRECT.GET.KUBE_HISTORY.kube.core.secrets.default.s", false},
		{"node list", nodeA, "$JS.API.CONSUMER.LIST.KUBE_NODEPODS", false},
		{"node publish own", nodeA, "knode.a.default.p", false},
		{"node publish history", nodeA, "kube.core.pods.default.p", false},
		{"node stream delete", nodeA, "$JS.API.STREAM.DELETE.KUBE_HISTORY", false},
		{"node stream purge", nodeA, "$JS.API.STREAM.PURGE.KUBE_NODEPODS", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Permissions(tc.id)
			if err != nil {
				t.Fatal(err)
			}
			if got := allowed(p.Publish, tc.subject); got != tc.want {
				t.Errorf("%s publishing %s: allowed %v, want %v", tc.id.User, tc.subject, got, tc.want)
			}
		})
	}
}

func TestSubscribeOnlyOwnInbox(t *testing.T) {
	for _, tc := range []struct {
		name    string
		id      Identity
		subject string
		want    bool
	}{
		{"own inbox", kcm, "_INBOX_system:kube-controller-manager.abc.1", true},
		{"node own inbox", nodeA, "_INBOX_system:node:a.abc.*", true},
		{"publisher own inbox", publisher, "_INBOX_system:kubebus:publisher.x.>", true},
		{"default inbox", kcm, "_INBOX.abc", false},
		{"another's inbox", nodeA, "_INBOX_system:node:b.abc", false},
		{"a prefix of its name", nodeA, "_INBOX_system:node:aa.abc", false},
		{"all inboxes", admin, "_INBOX_>", false},
		{"objects", kcm, "kube.>", false},
		{"node objects", nodeA, "knode.a.>", false},
		{"publisher objects", publisher, "kube.core.pods.default.p", false},
		{"acks", kcm, "$JS.ACK.>", false},
		{"api", kcm, "$JS.API.>", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Permissions(tc.id)
			if err != nil {
				t.Fatal(err)
			}
			if got := allowed(p.Subscribe, tc.subject); got != tc.want {
				t.Errorf("%s subscribing to %s: allowed %v, want %v", tc.id.User, tc.subject, got, tc.want)
			}
		})
	}
}

func TestNodeConsumerMatchesEscaping(t *testing.T) {
	for node, want := range map[string]string{"a": "kubelet-core-pods-a", "n1.example.com": "kubelet-core-pods-n1%2Eexample%2Ecom"} {
		if got := NodeConsumer(node); got != want {
			t.Errorf("NodeConsumer(%q) = %q, want %q", node, got, want)
		}
	}
}
