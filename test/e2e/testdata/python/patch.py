"""Patch in all three types. patch_namespaced_* picks the content type from
the body's shape (a dict: strategic merge; a list: JSON patch); a merge
patch goes through ApiClient.call_api with its content type."""
from kubernetes import client

from common import api_client, check, done, expect_status, namespace

api = api_client()
ns = namespace(api)
v1 = client.CoreV1Api(api)
apps = client.AppsV1Api(api)


def merge_patch(path, body, response_type):
    return api.call_api(path, "PATCH", header_params={"Content-Type": "application/merge-patch+json", "Accept": "application/json"},
                        body=body, response_type=response_type, auth_settings=["BearerToken"], _return_http_data_only=True)


v1.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="p", labels={"a": "1"}), data={"x": "1", "y": "2"}))

# Strategic merge (a dict body).
got = v1.patch_namespaced_config_map("p", ns, {"metadata": {"labels": {"b": "2"}}, "data": {"y": None, "z": "3"}})
check(got.metadata.labels == {"a": "1", "b": "2"}, "strategic merge labels: %s" % got.metadata.labels)
check(got.data == {"x": "1", "z": "3"}, "strategic merge data: %s" % got.data)

# JSON patch (a list body).
got = v1.patch_namespaced_config_map("p", ns, [
    {"op": "test", "path": "/data/x", "value": "1"},
    {"op": "replace", "path": "/data/x", "value": "10"},
    {"op": "remove", "path": "/metadata/labels/a"}])
check(got.data["x"] == "10" and got.metadata.labels == {"b": "2"}, "json patch: %s %s" % (got.data, got.metadata.labels))
expect_status(422, v1.patch_namespaced_config_map, "p", ns, [{"op": "test", "path": "/data/x", "value": "nope"}])

# Merge patch (RFC 7386): null deletes, maps merge.
got = merge_patch("/api/v1/namespaces/%s/configmaps/p" % ns, {"data": {"z": None, "w": "4"}}, "V1ConfigMap")
check(got.data == {"x": "10", "w": "4"}, "merge patch data: %s" % got.data)

# On a Deployment the types differ for lists: strategic merge merges
# containers by name, merge patch replaces the list.
dep = client.V1Deployment(
    metadata=client.V1ObjectMeta(name="web"),
    spec=client.V1DeploymentSpec(
        replicas=0, selector=client.V1LabelSelector(match_labels={"app": "web"}),
        template=client.V1PodTemplateSpec(metadata=client.V1ObjectMeta(labels={"app": "web"}), spec=client.V1PodSpec(
            containers=[client.V1Container(name="a", image="img:1"), client.V1Container(name="b", image="img:1")]))))
apps.create_namespaced_deployment(ns, dep)
got = apps.patch_namespaced_deployment("web", ns, {"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "img:2"}]}}}})
imgs = [(c.name, c.image) for c in got.spec.template.spec.containers]
check(imgs == [("a", "img:1"), ("b", "img:2")], "strategic merge of containers: %s" % imgs)
got = merge_patch("/apis/apps/v1/namespaces/%s/deployments/web" % ns,
                  {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "img:3"}]}}}}, "V1Deployment")
imgs = [(c.name, c.image) for c in got.spec.template.spec.containers]
check(imgs == [("c", "img:3")], "merge patch replaces containers: %s" % imgs)
got = apps.patch_namespaced_deployment("web", ns, [{"op": "add", "path": "/metadata/labels", "value": {"patched": "json"}}])
check(got.metadata.labels == {"patched": "json"}, "json patch on a deployment: %s" % got.metadata.labels)

# dry_run and field_manager as query parameters.
got = v1.patch_namespaced_config_map("p", ns, {"data": {"dry": "yes"}}, dry_run="All", field_manager="py-test")
check(got.data.get("dry") == "yes", "dry-run patch answer: %s" % got.data)
check("dry" not in (v1.read_namespaced_config_map("p", ns).data or {}), "dry-run patch was stored")
expect_status(422, v1.patch_namespaced_config_map, "p", ns, {"data": {}}, dry_run="Some")
expect_status(404, v1.patch_namespaced_config_map, "missing", ns, {"data": {}})

done("patch")
