"""The dynamic client: discovery-driven access by apiVersion and kind."""
import os
import tempfile

from kubernetes import dynamic

from common import api_client, check, done, namespace

api = api_client()
ns = namespace(api)
cache = os.path.join(tempfile.mkdtemp(), "discovery.json")
dyn = dynamic.DynamicClient(api, cache_file=cache)

cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
check(cms.namespaced and cms.name == "configmaps", "ConfigMap resource: %s" % cms)
created = cms.create(namespace=ns, body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dyn", "labels": {"via": "dynamic"}}, "data": {"a": "1"}})
check(created.metadata.name == "dyn" and created.data.a == "1", "dynamic create: %s" % created)
got = cms.get(namespace=ns, name="dyn")
check(got.metadata.uid == created.metadata.uid, "dynamic get")
listed = cms.get(namespace=ns, label_selector="via=dynamic")
check([i.metadata.name for i in listed.items] == ["dyn"], "dynamic list: %s" % listed)
patched = cms.patch(namespace=ns, name="dyn", body={"data": {"b": "2"}}, content_type="application/merge-patch+json")
check(patched.data.b == "2" and patched.data.a == "1", "dynamic merge patch: %s" % patched.data)
body = patched.to_dict()
body["data"] = {"c": "3"}
replaced = cms.replace(namespace=ns, body=body)
check(replaced.data.c == "3" and "a" not in replaced.data, "dynamic replace: %s" % replaced.data)

deps = dyn.resources.get(api_version="apps/v1", kind="Deployment")
dep = deps.create(namespace=ns, body={
    "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "dyn"},
    "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "dyn"}},
             "template": {"metadata": {"labels": {"app": "dyn"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
check(dep.spec.replicas == 0, "dynamic deployment: %s" % dep.spec)
scale = deps.subresources["scale"]
got = scale.get(namespace=ns, name="dyn")
check(got.kind == "Scale" and got.status.selector == "app=dyn", "dynamic scale read: %s" % got)
got = scale.patch(namespace=ns, name="dyn", body={"spec": {"replicas": 2}}, content_type="application/merge-patch+json")
check(got.spec.replicas == 2 and deps.get(namespace=ns, name="dyn").spec.replicas == 2, "dynamic scale patch: %s" % got)

seen = []
for ev in cms.watch(namespace=ns, timeout=10):
    seen.append((ev["type"], ev["object"].metadata.name))
    if ev["object"].metadata.name == "dyn":
        break
check(("ADDED", "dyn") in seen, "dynamic watch events: %s" % seen)

cms.delete(namespace=ns, name="dyn")
deps.delete(namespace=ns, name="dyn", body={"propagationPolicy": "Background"})
check(not cms.get(namespace=ns, label_selector="via=dynamic").items, "dynamic delete")

# Cluster-scoped resources through discovery of every group.
nss = dyn.resources.get(api_version="v1", kind="Namespace")
check(ns in [n.metadata.name for n in nss.get().items], "namespace list via dynamic")
check(len(dyn.resources.search(group="apps")) > 0, "discovery search for apps")

done("dynamic")
