"""A minimal, valid rule file for a neutral kind (Widget), written into a temporary rules folder, and RuleText,
the edits tests make to it."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from engine.cluster import readonly
from offline.realkube import BinariesMissing, KubeBinaries, KubeServer, find_binaries

readonly.check_reads()  # every test checks that no caller changes what a cluster read handed out (decision 37)
os.environ.setdefault(readonly.ENVIRONMENT, "1")  # and so does every process a test starts (`engine run`: status 70)


@pytest.fixture(autouse=True)
def _reads_stay_unchanged() -> Iterator[None]:
    """Fails the test when code under test changed an object a cluster read (kube cache or in-memory) handed out:
    with the read cache handing out the objects it holds, that change would reach every later reader."""
    readonly.changed()
    yield
    changed = readonly.changed()
    if changed:
        pytest.fail(f"objects a cluster read handed out were changed by their reader: {sorted(set(changed))[:10]}")


REAL_SERVER_VARIABLE = "C5C3_REAL_SERVER"
"""``require``: a test of the real-server tier fails when the binaries are missing (CI, ``scripts/test`` after it
built them); ``skip``: the tier is skipped; otherwise it is skipped only when the binaries are missing, saying
how to build them."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "kube_binaries" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.real_server)


@pytest.fixture(scope="session")
def kube_binaries() -> KubeBinaries:
    """The real kube-apiserver, kube-controller-manager, kubectl and etcd (``scripts/kube-binaries``)."""
    if os.environ.get(REAL_SERVER_VARIABLE) == "skip":
        pytest.skip(f"{REAL_SERVER_VARIABLE}=skip")
    try:
        return find_binaries()
    except BinariesMissing as missing:
        if os.environ.get(REAL_SERVER_VARIABLE) == "require":
            pytest.fail(f"{REAL_SERVER_VARIABLE}=require: {missing}")
        pytest.skip(str(missing))


@pytest.fixture(scope="session")
def real_cluster(kube_binaries: KubeBinaries) -> Iterator[Callable[[str], KubeServer]]:
    """Real clusters by name, each started on first use and shared by the session's tests (a start costs about
    3 s): a test keeps to its own namespaces and names. A test that needs a pristine cluster starts its own
    ``KubeServer``."""
    started: dict[str, KubeServer] = {}

    def cluster(name: str = "management") -> KubeServer:
        if name not in started:
            started[name] = KubeServer(name, binaries=kube_binaries).start()
        return started[name]

    yield cluster
    for server in started.values():
        server.stop()


class RuleText(str):
    """Rule-file (or template) text with edits that fail loudly: each anchor must occur exactly once.

    ``str.replace`` does nothing when its anchor is missing, so a test edit that no longer matches
    the rule file would test the unedited file and pass; these edits raise instead.
    """

    def swap(self, old: str, new: str) -> RuleText:
        """``old`` (occurring exactly once) replaced by ``new``."""
        return RuleText(self.replace(self._once(old), new))

    def add_after(self, anchor: str, text: str) -> RuleText:
        """``text`` inserted right after ``anchor`` (occurring exactly once)."""
        return RuleText(self.replace(self._once(anchor), anchor + text))

    def add_before(self, anchor: str, text: str) -> RuleText:
        """``text`` inserted right before ``anchor`` (occurring exactly once)."""
        return RuleText(self.replace(self._once(anchor), text + anchor))

    def drop(self, text: str) -> RuleText:
        """``text`` (occurring exactly once) removed."""
        return self.swap(text, "")

    def _once(self, anchor: str) -> str:
        count = self.count(anchor)
        if count != 1:
            raise AssertionError(f"the edit's anchor occurs {count} times, not once: {anchor!r}")
        return anchor


WIDGET = RuleText(textwrap.dedent("""\
    kind: Widget
    order:
      apiVersion: example.io/v1
      plural: widgets
      finalizer: example.io/teardown
      fieldManager: rule-engine
    conditions:
      types: [BuiltReady]
      ready:
        {type: Ready, trueReason: AllReady, trueMessage: all ready, falseReason: NotAllReady, falseMessage: not ready}
      reasons: [AllReady, NotAllReady, Built, Waiting, Broken]
    children:
      namespace: "{{ order.metadata.namespace }}"
      prefix: "{{ order.metadata.name }}-"
      labels: {name: example.io/name, namespace: example.io/namespace, cluster: example.io/cluster}
    values:
      size: "order.spec.size || `1`"
    steps:
      - name: build
        condition: BuiltReady
        metric: WidgetBuild
        do:
          - apply: part.yaml.j2
            as: part
          - wait: "part.status.ready"
            reason: Waiting
            message: "waiting for part {{ part.metadata.name }}"
            requeue: 10s
        done: {reason: Built, message: "built {{ size }} parts"}
    teardown:
      patientWhile: "`true`"
      do:
        - delete: {apiVersion: v1, kind: ConfigMap}
    """))

PART = RuleText(textwrap.dedent("""\
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: {{ (prefix ~ 'part') | tojson }}
      namespace: {{ childNamespace | tojson }}
      labels: {{ childLabels | tojson }}
    data:
      size: {{ size | string | tojson }}
    """))


@pytest.fixture
def rules_dir(tmp_path: Path) -> Callable[..., Path]:
    """Write the Widget rule file (optionally edited) and its template; return the rules folder."""

    def write(rule: str = WIDGET, template: str | None = PART, extra: dict[str, str] | None = None) -> Path:
        rules = tmp_path / "rules"
        templates = tmp_path / "templates" / "widget"
        rules.mkdir(exist_ok=True)
        templates.mkdir(parents=True, exist_ok=True)
        (rules / "widget.yaml").write_text(rule)
        if template is not None:
            (templates / "part.yaml.j2").write_text(template)
        for name, text in (extra or {}).items():
            target = tmp_path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        return rules

    return write
