"""List with label and field selectors and pagination (limit/_continue)."""
from kubernetes import client

from common import api_client, check, done, expect_status, namespace

api = api_client()
ns = namespace(api)
v1 = client.CoreV1Api(api)

for i in range(7):
    v1.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(
        name="cm-%d" % i, labels={"parity": "even" if i % 2 == 0 else "odd", "index": str(i)})))


def names(lst):
    return sorted(o.metadata.name for o in lst.items)


check(names(v1.list_namespaced_config_map(ns, label_selector="parity=even")) == ["cm-0", "cm-2", "cm-4", "cm-6"], "parity=even")
check(names(v1.list_namespaced_config_map(ns, label_selector="parity!=even,index in (1,3,4)")) == ["cm-1", "cm-3"], "set-based selector")
unlabelled = v1.list_namespaced_config_map(ns, label_selector="!index").items
check(all(not (o.metadata.labels or {}).get("index") for o in unlabelled), "!index: %s" % names(client.V1ConfigMapList(items=unlabelled)))
check(names(v1.list_namespaced_config_map(ns, field_selector="metadata.name=cm-5")) == ["cm-5"], "field selector metadata.name")
check(names(v1.list_namespaced_config_map(ns, field_selector="metadata.name!=cm-5", label_selector="parity=odd")) == ["cm-1", "cm-3"],
      "field and label selectors together")
all_ns = v1.list_config_map_for_all_namespaces(field_selector="metadata.namespace=" + ns, label_selector="index")
check(names(all_ns) == ["cm-%d" % i for i in range(7)], "cluster-wide list narrowed to the namespace: %s" % names(all_ns))
ns_list = v1.list_namespace(field_selector="metadata.name=" + ns)
check([n.metadata.name for n in ns_list.items] == [ns], "namespaces by name: %s" % ns_list.items)
expect_status(400, v1.list_namespaced_config_map, ns, label_selector="index in (1")
expect_status(400, v1.list_namespaced_config_map, ns, field_selector="spec.nope=x")

# Pagination: pages of 3 with a consistent resourceVersion.
seen, token, pages, rv = [], None, 0, None
while True:
    kwargs = {"limit": 3, "label_selector": "index"}
    if token:
        kwargs["_continue"] = token
    page = v1.list_namespaced_config_map(ns, **kwargs)
    pages += 1
    check(len(page.items) <= 3, "page of %d items with limit 3" % len(page.items))
    if rv is None:
        rv = page.metadata.resource_version
    check(page.metadata.resource_version == rv, "pages at different resourceVersions: %s %s" % (rv, page.metadata.resource_version))
    seen += [o.metadata.name for o in page.items]
    token = page.metadata._continue
    if not token:
        break
check(pages == 3 and seen == ["cm-%d" % i for i in range(7)], "paginated %d pages: %s" % (pages, seen))
first = v1.list_namespaced_config_map(ns, limit=2, label_selector="index")
check(len(first.items) == 2 and first.metadata._continue, "first page of 2: %s" % first.metadata)
expect_status(400, v1.list_namespaced_config_map, ns, limit=2, _continue="not-a-token")

# resourceVersion=0 (served from any state) and Exact at the list's revision.
check(len(v1.list_namespaced_config_map(ns, resource_version="0", label_selector="index").items) == 7, "list at resourceVersion 0")
exact = v1.list_namespaced_config_map(ns, resource_version=rv, resource_version_match="Exact", label_selector="index")
check(len(exact.items) == 7, "list at an exact resourceVersion")
expect_status(422, v1.list_namespaced_config_map, ns, resource_version_match="Exact")

done("list")
