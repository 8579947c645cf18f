"""The scale and status subresources."""
from kubernetes import client

from common import api_client, check, done, namespace, update_with_retry

api = api_client()
ns = namespace(api)
v1 = client.CoreV1Api(api)
apps = client.AppsV1Api(api)

dep = client.V1Deployment(
    metadata=client.V1ObjectMeta(name="web"),
    spec=client.V1DeploymentSpec(
        replicas=1, selector=client.V1LabelSelector(match_labels={"app": "web"}),
        template=client.V1PodTemplateSpec(metadata=client.V1ObjectMeta(labels={"app": "web"}), spec=client.V1PodSpec(
            containers=[client.V1Container(name="web", image="nginx")]))))
apps.create_namespaced_deployment(ns, dep)

scale = apps.read_namespaced_deployment_scale("web", ns)
check(scale.kind == "Scale" and scale.spec.replicas == 1, "read scale: %s" % scale)
check(scale.status.selector == "app=web", "scale selector: %s" % scale.status.selector)
scale = apps.patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": 3}})
check(scale.spec.replicas == 3, "patched scale: %s" % scale.spec)
check(apps.read_namespaced_deployment("web", ns).spec.replicas == 3, "patching scale did not change the deployment")
scale = update_with_retry(lambda: apps.read_namespaced_deployment_scale("web", ns),
                          lambda s: setattr(s.spec, "replicas", 2),
                          lambda s: apps.replace_namespaced_deployment_scale("web", ns, s))
check(scale.spec.replicas == 2 and apps.read_namespaced_deployment("web", ns).spec.replicas == 2, "replaced scale: %s" % scale.spec)

# Status: a write to /status changes status only; a write to the object
# leaves status alone.
pod = v1.create_namespaced_pod(ns, client.V1Pod(
    metadata=client.V1ObjectMeta(name="p"),
    spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox")], node_name="nowhere")))
got = v1.read_namespaced_pod_status("p", ns)
check(got.metadata.name == "p", "read pod status")
got = v1.patch_namespaced_pod_status("p", ns, {"status": {"conditions": [{"type": "PyTest", "status": "True"}]}, "metadata": {"labels": {"ignored": "yes"}}})
conds = {c.type: c.status for c in got.status.conditions or []}
check(conds.get("PyTest") == "True", "patched pod status conditions: %s" % conds)
check(not (got.metadata.labels or {}).get("ignored"), "a status patch changed labels: %s" % got.metadata.labels)

cur = v1.read_namespaced_pod_status("p", ns)
cur.status.message = "replaced by python"
got = v1.replace_namespaced_pod_status("p", ns, cur)
check(got.status.message == "replaced by python", "replaced pod status: %s" % got.status.message)

got = v1.patch_namespaced_pod("p", ns, {"status": {"message": "through the object"}})
check(got.status.message == "replaced by python", "a patch of the object changed status: %s" % got.status.message)

def bump(d):
    d.status.observed_generation = 99
    d.spec.replicas = 7  # ignored by a status write


dstatus = update_with_retry(lambda: apps.read_namespaced_deployment_status("web", ns), bump,
                            lambda d: apps.replace_namespaced_deployment_status("web", ns, d))
check(dstatus.status.observed_generation == 99, "replaced deployment status: %s" % dstatus.status)
check(dstatus.spec.replicas == 2, "a status write changed spec.replicas to %s" % dstatus.spec.replicas)

done("subresources")
