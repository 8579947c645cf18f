"""Watch from now and from a resourceVersion with watch.Watch().stream, which
sends watch=True (a Python bool) and allowWatchBookmarks=True."""
from kubernetes import client, watch

from common import api_client, check, done, namespace

api = api_client()
ns = namespace(api)
v1 = client.CoreV1Api(api)


def cm(name, **labels):
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels=labels or None))


# From now: the stream first lists what exists as ADDED, then follows the
# changes the script makes once it has seen the stream is live.
v1.create_namespaced_config_map(ns, cm("before"))
got = []
w = watch.Watch()
for ev in w.stream(v1.list_namespaced_config_map, ns, timeout_seconds=30, allow_watch_bookmarks=True):
    if ev["type"] == "BOOKMARK":
        continue
    obj = ev["object"]
    if obj.metadata.name == "kube-root-ca.crt":
        continue  # the root CA publisher's, in every namespace
    got.append((ev["type"], obj.metadata.name))
    if got == [("ADDED", "before")]:
        v1.create_namespaced_config_map(ns, cm("after"))
    elif got[-1] == ("ADDED", "after"):
        v1.patch_namespaced_config_map("after", ns, {"data": {"k": "v"}})
    elif got[-1] == ("MODIFIED", "after"):
        check(obj.data == {"k": "v"}, "MODIFIED event data: %s" % obj.data)
        v1.delete_namespaced_config_map("after", ns)
    elif got[-1] == ("DELETED", "after"):
        w.stop()
want = [("ADDED", "before"), ("ADDED", "after"), ("MODIFIED", "after"), ("DELETED", "after")]
check(got == want, "watch from now: events %s, want %s" % (got, want))

# From a resourceVersion: only what happened after it, in order.
first = v1.create_namespaced_config_map(ns, cm("rv-1"))
v1.create_namespaced_config_map(ns, cm("rv-2"))
v1.patch_namespaced_config_map("rv-2", ns, {"metadata": {"labels": {"step": "two"}}})
v1.delete_namespaced_config_map("rv-1", ns)
got = []
last_rv = first.metadata.resource_version
for ev in w.stream(v1.list_namespaced_config_map, ns, resource_version=first.metadata.resource_version, timeout_seconds=30):
    if ev["object"].metadata.name == "kube-root-ca.crt":
        continue
    got.append((ev["type"], ev["object"].metadata.name))
    check(int(ev["object"].metadata.resource_version) > int(last_rv), "resourceVersions not increasing: %s" % got)
    last_rv = ev["object"].metadata.resource_version
    if len(got) == 3:
        w.stop()
want = [("ADDED", "rv-2"), ("MODIFIED", "rv-2"), ("DELETED", "rv-1")]
check(got == want, "watch from resourceVersion %s: events %s, want %s" % (first.metadata.resource_version, got, want))

# A watch with a label selector sees an object enter and leave it.
v1.create_namespaced_config_map(ns, cm("anchor", role="picked"))
v1.create_namespaced_config_map(ns, cm("sel"))
got = []
for ev in w.stream(v1.list_namespaced_config_map, ns, label_selector="role=picked", timeout_seconds=30):
    got.append((ev["type"], ev["object"].metadata.name))
    if got[-1] == ("ADDED", "anchor"):
        v1.patch_namespaced_config_map("sel", ns, {"metadata": {"labels": {"role": "picked"}}})
    elif got[-1] == ("ADDED", "sel"):
        v1.patch_namespaced_config_map("sel", ns, {"metadata": {"labels": {"role": "other"}}})
    else:
        w.stop()
want = [("ADDED", "anchor"), ("ADDED", "sel"), ("DELETED", "sel")]
check(got == want, "selector watch: events %s, want %s" % (got, want))

done("watch")
