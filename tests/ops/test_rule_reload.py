"""Live rule reload on a running operator (in-memory cluster): a changed rule set is swapped in between
passes, a broken one is refused and the running rules keep serving, a pass never straddles two sets."""

from __future__ import annotations

import contextlib
import contextvars
import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.clock import SystemClock
from engine.cluster.api import NotFound, Obj
from engine.operator import Operator, Options
from engine.runtime.reload import Reload, short
from offline.cluster.memory import MemoryCluster
from tests.conftest import PART, WIDGET, RuleText

NO_WAIT = RuleText(WIDGET).drop("""\
      - wait: "part.status.ready"
        reason: Waiting
        message: "waiting for part {{ part.metadata.name }}"
        requeue: 10s
""")


def options(rules: Path, **changes: object) -> Options:
    base = Options(rules=rules, metrics_bind_address="0", health_probe_bind_address="0",
                   clusters_namespace="", watch_timeout=0.2, rules_reload_interval=0.05)
    return Options(**{**base.__dict__, **changes})  # type: ignore[arg-type]


def wait_for(what: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not what():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@contextlib.contextmanager
def running(operator: Operator) -> Iterator[None]:
    stop = threading.Event()
    thread = threading.Thread(target=contextvars.copy_context().run, args=(operator.run, stop))
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive()


def widget(name: str) -> Obj:
    return {"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": name, "namespace": "default"},
            "spec": {"size": 2}}


def part_data(cluster: MemoryCluster, name: str) -> dict[str, Any] | None:
    try:
        return dict(cluster.get("v1", "ConfigMap", "default", f"{name}-part").get("data") or {})
    except NotFound:
        return None


def sample(operator: Operator, name: str, **labels: str) -> float:
    return operator.registry.get_sample_value(name, labels) or 0.0


@pytest.fixture
def cluster() -> MemoryCluster:
    return MemoryCluster("", clock=SystemClock(), permissive=True)


def test_a_changed_template_is_used_by_the_next_pass(rules_dir: Callable[..., Path], cluster: MemoryCluster,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    """Edit a template under a running operator: it is reloaded without a restart and the order's next
    pass writes the new child; the reload is counted and the info metric names the new hash."""
    rules = rules_dir(NO_WAIT)
    caplog.set_level(logging.INFO, logger="engine.rules")
    operator = Operator(options(rules), cluster)
    first_hash = operator.reloader.loaded
    assert sample(operator, "c5c3_operator_rules_info", hash=short(first_hash)) == 1
    with running(operator):
        cluster.create(widget("w1"))
        assert wait_for(lambda: part_data(cluster, "w1") == {"size": "2"})
        template = rules.parent / "templates" / "widget" / "part.yaml.j2"
        template.write_text(PART.add_after("\ndata:\n", "  colour: \"blue\"\n"))
        assert wait_for(lambda: part_data(cluster, "w1") == {"size": "2", "colour": "blue"})
    assert sample(operator, "c5c3_operator_rules_reload_total", result="loaded") == 1
    assert operator.reloader.loaded != first_hash
    assert sample(operator, "c5c3_operator_rules_info", hash=short(operator.reloader.loaded)) == 1
    assert sample(operator, "c5c3_operator_rules_info", hash=short(first_hash)) == 0
    assert any("rules reloaded" in r.getMessage() for r in caplog.records)


def test_a_broken_rule_file_is_refused_and_the_old_rules_keep_serving(
        rules_dir: Callable[..., Path], cluster: MemoryCluster, caplog: pytest.LogCaptureFixture) -> None:
    """A rule file that does not lint: refused with its file:line:col lines at error and the metric, /readyz
    stays ok, and a new order is still served by the rules that were running (refused once, not every poll)."""
    rules = rules_dir(NO_WAIT)
    operator = Operator(options(rules), cluster)
    served = operator.reloader.loaded
    caplog.set_level(logging.INFO, logger="engine.rules")
    with running(operator):
        assert wait_for(operator.ready)
        (rules / "widget.yaml").write_text(NO_WAIT.swap("metric: WidgetBuild", "metric: WidgetBuild\n    bogus: 1"))
        assert wait_for(lambda: sample(operator, "c5c3_operator_rules_reload_total", result="refused") == 1)
        assert operator.ready()
        cluster.create(widget("w2"))
        assert wait_for(lambda: part_data(cluster, "w2") == {"size": "2"})
        time.sleep(0.3)  # several more polls of the same broken set
    assert sample(operator, "c5c3_operator_rules_reload_total", result="refused") == 1
    assert sample(operator, "c5c3_operator_rules_reload_total", result="loaded") == 0
    assert operator.reloader.loaded == served
    assert sample(operator, "c5c3_operator_rules_info", hash=short(served)) == 1
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR and r.name == "engine.rules"]
    assert any(line.startswith(f"{rules / 'widget.yaml'}:") and "bogus" in line for line in errors), errors
    assert any(f"still serving rules {short(served)}" in line for line in errors), errors


class PausingCluster(MemoryCluster):
    """Runs a hook the first time a given child is applied: a reload landing in the middle of a pass."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hook: Callable[[], None] | None = None

    def apply(self, obj: Obj, *, field_manager: str, force: bool = False, status: bool = False) -> Obj:
        hook, self.hook = self.hook, None
        if hook is not None and obj["metadata"]["name"].endswith("-part"):
            hook()
        return super().apply(obj, field_manager=field_manager, force=force, status=status)


SECOND = RuleText(PART.swap("'part'", "'second'"))


def versioned(text: str, version: str) -> str:
    return RuleText(text).add_after("\ndata:\n", f"  version: \"{version}\"\n")


def test_a_pass_is_never_split_across_two_rule_sets(rules_dir: Callable[..., Path]) -> None:
    """A reload that lands while a pass is between its two applies: that pass ends on the rules it began
    with (both children at version 1); the order's next pass writes both with the new rules (version 2)."""
    rule = NO_WAIT.add_after("        as: part\n", "      - apply: second.yaml.j2\n        as: second\n")
    rules = rules_dir(rule, versioned(PART, "1"), extra={"templates/widget/second.yaml.j2": versioned(SECOND, "1")})
    templates = rules.parent / "templates" / "widget"
    cluster = PausingCluster("", clock=SystemClock(), permissive=True)
    operator = Operator(options(rules), cluster)
    manager = operator.manager
    manager.start()
    cluster.create(widget("w3"))

    def reload_now() -> None:
        (templates / "part.yaml.j2").write_text(versioned(PART, "2"))
        (templates / "second.yaml.j2").write_text(versioned(SECOND, "2"))
        assert operator.reloader.poll() is Reload.LOADED

    cluster.hook = reload_now
    manager.sources.pump()
    assert manager.controller.process_next() is not None  # the pass during which the rules were swapped
    assert cluster.hook is None
    versions = [cluster.get("v1", "ConfigMap", "default", f"w3-{n}")["data"]["version"] for n in ("part", "second")]
    assert versions == ["1", "1"]
    manager.settle()
    versions = [cluster.get("v1", "ConfigMap", "default", f"w3-{n}")["data"]["version"] for n in ("part", "second")]
    assert versions == ["2", "2"]


def test_watches_follow_the_reloaded_rules(rules_dir: Callable[..., Path], cluster: MemoryCluster) -> None:
    """A rule file added while running opens the watches of its kind (and its existing orders are served);
    removed again, they are closed and the other kind's stay."""
    rules = rules_dir(NO_WAIT)
    operator = Operator(options(rules), cluster)
    manager = operator.manager
    manager.start()

    def watched() -> set[str]:
        return {informer.kind for informer in manager.sources.informers()}

    assert watched() == {"Widget", "ConfigMap"}
    gadget = {"apiVersion": "example.io/v1", "kind": "Gadget", "metadata": {"name": "g1", "namespace": "default"},
              "spec": {}}
    cluster.create(gadget)
    (rules / "gadget.yaml").write_text(NO_WAIT.swap("kind: Widget", "kind: Gadget").swap("plural: widgets",
                                                                                         "plural: gadgets"))
    gadget_templates = rules.parent / "templates" / "gadget"
    gadget_templates.mkdir()
    (gadget_templates / "part.yaml.j2").write_text(PART.swap("'part'", "'gadget-part'"))
    assert operator.reloader.poll() is Reload.LOADED
    assert watched() == {"Widget", "Gadget", "ConfigMap"}
    manager.settle()
    assert cluster.get("v1", "ConfigMap", "default", "g1-gadget-part")["data"] == {"size": "1"}
    (rules / "gadget.yaml").unlink()
    assert operator.reloader.poll() is Reload.LOADED
    assert watched() == {"Widget", "ConfigMap"}
