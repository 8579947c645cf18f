"""Helpers shared by the Python client scripts that python_test.go runs.

Each script loads $KUBECONFIG, works in the namespace $KUBEBUS_TEST_NS
(created by the script), asserts with check() and exits non-zero with a
message on the first failure.
"""
import os
import sys
import time

from kubernetes import client, config
from kubernetes.client.rest import ApiException


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def api_client():
    config.load_kube_config()
    return client.ApiClient()


def namespace(api):
    """Creates the test's namespace and returns its name."""
    name = os.environ["KUBEBUS_TEST_NS"]
    client.CoreV1Api(api).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    return name


def expect_status(code, fn, *args, **kwargs):
    """Calls fn and checks that it fails with the HTTP status code."""
    try:
        fn(*args, **kwargs)
    except ApiException as e:
        check(e.status == code, "%s: got HTTP %d, want %d: %s" % (fn.__name__, e.status, code, e.body))
        return e
    fail("%s succeeded, want HTTP %d" % (fn.__name__, code))


def eventually(what, cond, timeout=60):
    """Polls cond (a function returning a value or None/False) until it
    returns something true, failing after timeout seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            got = cond()
        except ApiException as e:
            got, last = None, e
        if got:
            return got
        time.sleep(0.2)
    fail("timed out after %ds waiting for %s (last error: %s)" % (timeout, what, last))


def done(name):
    print("ok: " + name)


def update_with_retry(read, mutate, write):
    """Read-modify-write that retries on 409, as controllers writing status
    race with the script (client-go's RetryOnConflict)."""
    for _ in range(20):
        obj = read()
        mutate(obj)
        try:
            return write(obj)
        except ApiException as e:
            if e.status != 409:
                raise
    fail("update kept conflicting")


def is_gone(fn, *args):
    """Reports whether reading with fn answers 404."""
    try:
        fn(*args)
    except ApiException as e:
        if e.status == 404:
            return True
        raise
    return False
