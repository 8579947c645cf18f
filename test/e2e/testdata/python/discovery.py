"""Version and discovery: the paths the Python client asks with a trailing
slash (/version/, /apis/, /api/, /api/v1/, /apis/apps/, /apis/apps/v1/)."""
from kubernetes import client

from common import api_client, check, done

api = api_client()

info = client.VersionApi(api).get_code()
check(info.major == "1" and info.git_version.startswith("v1."), "version: %s" % info)

groups = client.ApisApi(api).get_api_versions()
names = [g.name for g in groups.groups]
check("apps" in names and "coordination.k8s.io" in names, "ApisApi().get_api_versions() groups: %s" % names)
check("" not in names, "the core group is not listed under /apis: %s" % names)

core = client.CoreApi(api).get_api_versions()
check(core.versions == ["v1"], "CoreApi().get_api_versions(): %s" % core.versions)

res = client.CoreV1Api(api).get_api_resources()
check(res.group_version == "v1", "core v1 resources group version: %s" % res.group_version)
by_name = {r.name: r for r in res.resources}
for want in ("pods", "configmaps", "services", "namespaces", "pods/status", "pods/log"):
    check(want in by_name, "core v1 resources lack %s: %s" % (want, sorted(by_name)))
check(by_name["pods"].namespaced and not by_name["namespaces"].namespaced, "scopes: %s %s" % (by_name["pods"], by_name["namespaces"]))
check("watch" in by_name["configmaps"].verbs, "configmaps verbs: %s" % by_name["configmaps"].verbs)

apps = client.AppsApi(api).get_api_group()
check(apps.name == "apps" and apps.preferred_version.version == "v1", "AppsApi().get_api_group(): %s" % apps)

appsv1 = client.AppsV1Api(api).get_api_resources()
apps_names = {r.name for r in appsv1.resources}
for want in ("deployments", "deployments/scale", "deployments/status", "replicasets"):
    check(want in apps_names, "apps/v1 resources lack %s: %s" % (want, sorted(apps_names)))
check(appsv1.group_version == "apps/v1", "apps/v1 group version: %s" % appsv1.group_version)

done("discovery")
