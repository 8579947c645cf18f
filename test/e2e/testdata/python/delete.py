"""Deletion with propagation: Foreground, Background and Orphan through
V1DeleteOptions in the body and through query parameters. The controller
manager's garbage collector does the cascading."""
from kubernetes import client

from common import api_client, check, done, eventually, expect_status, is_gone, namespace

api = api_client()
ns = namespace(api)
v1 = client.CoreV1Api(api)
apps = client.AppsV1Api(api)


def deployment(name):
    return client.V1Deployment(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1DeploymentSpec(
            replicas=1, selector=client.V1LabelSelector(match_labels={"app": name}),
            template=client.V1PodTemplateSpec(metadata=client.V1ObjectMeta(labels={"app": name}), spec=client.V1PodSpec(
                containers=[client.V1Container(name="c", image="nginx")]))))


def replicasets(name):
    return [rs for rs in apps.list_namespaced_replica_set(ns, label_selector="app=" + name).items]


def with_replicaset(name):
    apps.create_namespaced_deployment(ns, deployment(name))
    rs = eventually("a ReplicaSet of " + name, lambda: replicasets(name))
    return rs[0].metadata.name


# Foreground: the owner waits, with the foregroundDeletion finalizer, until
# its dependents are gone.
rs = with_replicaset("fg")
got = apps.delete_namespaced_deployment("fg", ns, body=client.V1DeleteOptions(propagation_policy="Foreground"))
eventually("deployment fg and its ReplicaSet to go",
           lambda: is_gone(apps.read_namespaced_replica_set, rs, ns) and is_gone(apps.read_namespaced_deployment, "fg", ns))

# Background: the owner goes at once, the collector removes dependents.
rs = with_replicaset("bg")
apps.delete_namespaced_deployment("bg", ns, propagation_policy="Background")
check(is_gone(apps.read_namespaced_deployment, "bg", ns), "deployment bg still there after a background delete")
eventually("ReplicaSet %s to be collected" % rs, lambda: is_gone(apps.read_namespaced_replica_set, rs, ns))

# Orphan: dependents stay, without the owner reference.
rs = with_replicaset("or")
apps.delete_namespaced_deployment("or", ns, body=client.V1DeleteOptions(propagation_policy="Orphan"))
eventually("deployment or to go", lambda: is_gone(apps.read_namespaced_deployment, "or", ns))
eventually("ReplicaSet %s to lose its owner" % rs,
           lambda: not apps.read_namespaced_replica_set(rs, ns).metadata.owner_references)
check(not is_gone(apps.read_namespaced_replica_set, rs, ns), "orphaned ReplicaSet was deleted")

# The deprecated orphanDependents bool, as the client sends it (True).
rs2 = with_replicaset("od")
apps.delete_namespaced_deployment("od", ns, orphan_dependents=True)
eventually("deployment od to go", lambda: is_gone(apps.read_namespaced_deployment, "od", ns))
check(not is_gone(apps.read_namespaced_replica_set, rs2, ns), "orphanDependents=True deleted the ReplicaSet")

# Bad options are upstream's errors.
v1.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="keep")))
expect_status(422, v1.delete_namespaced_config_map, "keep", ns, propagation_policy="Sideways")
expect_status(422, v1.delete_namespaced_config_map, "keep", ns, body=client.V1DeleteOptions(propagation_policy="Orphan", orphan_dependents=True))
# dry run and a grace period through the query.
v1.delete_namespaced_config_map("keep", ns, dry_run="All", grace_period_seconds=0)
check(not is_gone(v1.read_namespaced_config_map, "keep", ns), "dry-run delete removed the configmap")
# A precondition on the UID.
expect_status(409, v1.delete_namespaced_config_map, "keep", ns,
              body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="00000000-0000-0000-0000-000000000000")))
v1.delete_collection_namespaced_config_map(ns, field_selector="metadata.name=keep")
check(is_gone(v1.read_namespaced_config_map, "keep", ns), "deletecollection left the configmap")

done("delete")
