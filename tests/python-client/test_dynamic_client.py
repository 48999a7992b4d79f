"""The Python ``kubernetes`` client's dynamic client against wasm-apiserver: CRUD, label and field
selectors, watch, and server-side apply with a conflict, on the wardle plugin's flunders.

Run by tests/tests/python_client.rs against a fresh server: ``WASM_APISERVER_KUBECONFIG`` names its kubeconfig.
By hand: ``WASM_APISERVER_KUBECONFIG=/path/kubeconfig python3 -m unittest discover -s tests/python-client``.
"""

import os
import threading
import time
import unittest
import uuid

from kubernetes import config, dynamic
from kubernetes.dynamic.exceptions import ConflictError, NotFoundError, UnprocessibleEntityError

NAMESPACE = "default"
DEADLINE = 30


def flunder(name, labels=None, **spec):
    return {
        "apiVersion": "wardle.example.com/v1beta1",
        "kind": "Flunder",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": spec,
    }


def body_text(error):
    """The response body of an API exception, as text."""
    body = error.body
    return body.decode() if isinstance(body, bytes) else str(body)


def unique(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class DynamicClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        path = os.environ.get("WASM_APISERVER_KUBECONFIG")
        if not path:
            raise unittest.SkipTest("set WASM_APISERVER_KUBECONFIG to a wasm-apiserver's kubeconfig")
        cls.client = dynamic.DynamicClient(config.new_client_from_config(config_file=path))
        cls.flunders = cls.client.resources.get(api_version="wardle.example.com/v1beta1", kind="Flunder")

    def test_crud(self):
        name = unique("crud")
        created = self.flunders.create(body=flunder(name, replicas=1), namespace=NAMESPACE)
        self.assertEqual(created.metadata.name, name)
        self.assertEqual(created.spec.replicas, 1)
        got = self.flunders.get(name=name, namespace=NAMESPACE)
        self.assertEqual(got.metadata.uid, created.metadata.uid)
        body = got.to_dict()
        body["spec"]["replicas"] = 2
        replaced = self.flunders.replace(body=body, namespace=NAMESPACE)
        self.assertEqual(replaced.spec.replicas, 2)
        self.assertEqual(replaced.metadata.generation, 2)
        patched = self.flunders.patch(
            name=name,
            namespace=NAMESPACE,
            body={"spec": {"replicas": 3}},
            content_type="application/merge-patch+json",
        )
        self.assertEqual(patched.spec.replicas, 3)
        stale = replaced.to_dict()
        with self.assertRaises(ConflictError):
            self.flunders.replace(body=stale, namespace=NAMESPACE)
        with self.assertRaises(UnprocessibleEntityError) as invalid:
            self.flunders.create(body=flunder(unique("bad"), referenceType="Nope"), namespace=NAMESPACE)
        self.assertIn("spec.referenceType", body_text(invalid.exception))
        self.flunders.delete(name=name, namespace=NAMESPACE)
        with self.assertRaises(NotFoundError):
            self.flunders.get(name=name, namespace=NAMESPACE)

    def test_label_and_field_selectors(self):
        team = unique("team")
        names = [unique("sel") for _ in range(3)]
        for i, name in enumerate(names):
            labels = {"team": team, "pick": "yes" if i < 2 else "no"}
            self.flunders.create(body=flunder(name, labels), namespace=NAMESPACE)
        picked = self.flunders.get(namespace=NAMESPACE, label_selector=f"team={team},pick=yes")
        self.assertEqual(sorted(i.metadata.name for i in picked.items), sorted(names[:2]))
        one = self.flunders.get(namespace=NAMESPACE, field_selector=f"metadata.name={names[2]}")
        self.assertEqual([i.metadata.name for i in one.items], [names[2]])
        paged = self.flunders.get(namespace=NAMESPACE, label_selector=f"team={team}", limit=2)
        self.assertEqual(len(paged.items), 2)
        self.assertTrue(paged.metadata["continue"])

    def test_watch_sees_added_modified_deleted(self):
        team = unique("watch")
        name = unique("w")
        events = []
        done = threading.Event()

        def follow():
            for event in self.flunders.watch(namespace=NAMESPACE, label_selector=f"team={team}", timeout=DEADLINE):
                events.append((event["type"], event["object"].metadata.name))
                if event["type"] == "DELETED":
                    done.set()
                    return

        watcher = threading.Thread(target=follow, daemon=True)
        watcher.start()
        # The watch starts before the writes: retry the sequence until the watcher has seen the create.
        deadline = time.monotonic() + DEADLINE
        self.flunders.create(body=flunder(name, {"team": team}), namespace=NAMESPACE)
        while not events and time.monotonic() < deadline:
            time.sleep(0.05)
        self.flunders.patch(
            name=name, namespace=NAMESPACE, body={"spec": {"replicas": 5}},
            content_type="application/merge-patch+json",
        )
        self.flunders.delete(name=name, namespace=NAMESPACE)
        self.assertTrue(done.wait(DEADLINE), f"no DELETED event: {events}")
        kinds = [kind for kind, _ in events]
        self.assertEqual(kinds[-1], "DELETED", events)
        self.assertIn("MODIFIED", kinds, events)
        self.assertEqual({n for _, n in events}, {name})

    def test_server_side_apply_with_a_conflict(self):
        name = unique("ssa")
        applied = self.client.server_side_apply(
            self.flunders, body=flunder(name, replicas=1), namespace=NAMESPACE, field_manager="first"
        )
        self.assertEqual(applied.spec.replicas, 1)
        with self.assertRaises(ConflictError) as conflict:
            self.client.server_side_apply(
                self.flunders, body=flunder(name, replicas=2), namespace=NAMESPACE, field_manager="second"
            )
        self.assertIn(".spec.replicas", body_text(conflict.exception))
        forced = self.client.server_side_apply(
            self.flunders, body=flunder(name, replicas=2), namespace=NAMESPACE, field_manager="second",
            force_conflicts=True,
        )
        self.assertEqual(forced.spec.replicas, 2)
        managers = sorted(e["manager"] for e in forced.metadata.managedFields)
        self.assertEqual(managers, ["first", "second"])


if __name__ == "__main__":
    unittest.main()
