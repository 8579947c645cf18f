"""Create, read, replace and delete on core (configmaps, services,
namespaces) and apps (deployments)."""
from kubernetes import client

from common import api_client, check, done, eventually, expect_status, is_gone, namespace, update_with_retry

api = api_client()
ns = namespace(api)
v1 = client.CoreV1Api(api)
apps = client.AppsV1Api(api)

# ConfigMaps.
cm = v1.create_namespaced_config_map(ns, client.V1ConfigMap(
    metadata=client.V1ObjectMeta(name="settings", labels={"app": "crud"}), data={"mode": "fast"}))
check(cm.metadata.uid and cm.metadata.resource_version, "created configmap lacks uid/resourceVersion: %s" % cm.metadata)
got = v1.read_namespaced_config_map("settings", ns)
check(got.data == {"mode": "fast"}, "read configmap data: %s" % got.data)
got.data["mode"] = "slow"
replaced = v1.replace_namespaced_config_map("settings", ns, got)
check(replaced.data["mode"] == "slow", "replaced configmap data: %s" % replaced.data)
check(int(replaced.metadata.resource_version) > int(cm.metadata.resource_version), "resourceVersion did not grow on replace")
# A replace with the old resourceVersion conflicts.
expect_status(409, v1.replace_namespaced_config_map, "settings", ns, cm)
expect_status(409, v1.create_namespaced_config_map, ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="settings")))
# dry_run creates nothing.
v1.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="dry")), dry_run="All")
expect_status(404, v1.read_namespaced_config_map, "dry", ns)
st = v1.delete_namespaced_config_map("settings", ns)
check(st.status == "Success", "delete configmap status: %s" % st)
expect_status(404, v1.read_namespaced_config_map, "settings", ns)

# Services: the server allocates a cluster IP.
svc = v1.create_namespaced_service(ns, client.V1Service(
    metadata=client.V1ObjectMeta(name="web"),
    spec=client.V1ServiceSpec(selector={"app": "web"}, ports=[client.V1ServicePort(port=80, target_port=8080)])))
check(svc.spec.cluster_ip and svc.spec.cluster_ip != "None", "service has no cluster IP: %s" % svc.spec)
check(svc.spec.ports[0].protocol == "TCP", "service port protocol not defaulted: %s" % svc.spec.ports)
svc = v1.read_namespaced_service("web", ns)
svc.metadata.labels = {"tier": "front"}
svc = v1.replace_namespaced_service("web", ns, svc)
check(svc.metadata.labels == {"tier": "front"}, "replaced service labels: %s" % svc.metadata.labels)
v1.delete_namespaced_service("web", ns)
expect_status(404, v1.read_namespaced_service, "web", ns)

# Namespaces (cluster-scoped).
other = ns + "-other"
v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=other, labels={"team": "a"})))
check(v1.read_namespace(other).status.phase == "Active", "new namespace is not Active")
got = v1.read_namespace(other)
got.metadata.labels["team"] = "b"
check(v1.replace_namespace(other, got).metadata.labels["team"] == "b", "replaced namespace label")
v1.delete_namespace(other)
eventually("namespace %s to go" % other, lambda: is_gone(v1.read_namespace, other))

# Deployments.
dep = client.V1Deployment(
    metadata=client.V1ObjectMeta(name="web"),
    spec=client.V1DeploymentSpec(
        replicas=2,
        selector=client.V1LabelSelector(match_labels={"app": "web"}),
        template=client.V1PodTemplateSpec(
            metadata=client.V1ObjectMeta(labels={"app": "web"}),
            spec=client.V1PodSpec(containers=[client.V1Container(name="web", image="nginx")]))))
created = apps.create_namespaced_deployment(ns, dep)
check(created.spec.strategy.type == "RollingUpdate", "deployment strategy not defaulted: %s" % created.spec.strategy)
replaced = update_with_retry(lambda: apps.read_namespaced_deployment("web", ns),
                             lambda d: setattr(d.spec, "replicas", 3),
                             lambda d: apps.replace_namespaced_deployment("web", ns, d))
check(replaced.spec.replicas == 3, "replaced deployment replicas: %s" % replaced.spec.replicas)
listed = apps.list_namespaced_deployment(ns)
check([d.metadata.name for d in listed.items] == ["web"], "deployments listed: %s" % listed.items)
apps.delete_namespaced_deployment("web", ns)
eventually("deployment web to go", lambda: is_gone(apps.read_namespaced_deployment, "web", ns))

done("crud")
