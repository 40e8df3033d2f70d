"""The checks of an ``expect`` step, each read from the live world as a person would with kubectl.

A check returns nothing when it holds, or the lines that explain what differs. No line
ever holds a Secret's data value (``secretData`` says only "differs").
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
from collections.abc import Callable
from typing import Any

from engine import durations
from engine.cluster.api import NotFound, Obj
from offline.scenario import model as m
from offline.scenario.match import match
from offline.scenario.report import diff, is_secret, mask_secret, mismatch_line, short
from offline.scenario.world import World

__all__ = ["check", "describe"]

Lines = list[str]


def check(world: World, assertion: m.Assertion) -> Lines:
    """Empty when the assertion holds; else the explanation."""
    handler = _CHECKS[type(assertion)]
    return handler(world, assertion)


def describe(world: World, assertion: m.Assertion) -> str:
    """How a failure names the assertion: its verb and what it is about."""
    where = f" on cluster {assertion.cluster!r}" if assertion.cluster else ""
    ref = getattr(assertion, "ref", None)
    about = ""
    if isinstance(ref, m.Ref):
        about = f" {_ref_text(world, ref)}" if ref.name else f" {world.api_version(ref)}/{ref.kind}"
    return f"{assertion.verb}{about}{where}"


def _ref_text(world: World, ref: m.Ref) -> str:
    return ref.describe(world.api_version(ref))


def _get(world: World, cluster: str, ref: m.Ref) -> Obj | None:
    try:
        return world.cluster(cluster).get(world.api_version(ref), ref.kind, ref.namespace, ref.name)
    except NotFound:
        return None


def _missing(world: World, ref: m.Ref, cluster: str) -> Lines:
    where = f" on cluster {cluster!r}" if cluster else ""
    return [f"{_ref_text(world, ref)} does not exist{where}"]


def _duration(delta: Any) -> str:
    return "null" if delta is None else durations.format_ns(delta // dt.timedelta(microseconds=1) * durations.US)


# ---------------------------------------------------------------------------


def _present(world: World, a: m.Assertion) -> Lines:
    assert isinstance(a, m.Present) and a.ref is not None
    live = _get(world, a.cluster, a.ref)
    if live is None:
        return _missing(world, a.ref, a.cluster)
    expected = a.expected
    mismatches, projected = match(expected, live)
    if not mismatches:
        return []
    secret = is_secret(live)
    lines = [mismatch_line(x, secret=secret) for x in mismatches]
    want, got = mask_secret(expected, projected) if secret else (expected, projected)
    return [*lines, *diff(want, got)]


def _absent(world: World, a: m.Assertion) -> Lines:
    assert isinstance(a, m.Absent) and a.ref is not None
    live = _get(world, a.cluster, a.ref)
    if live is None:
        return []
    meta = live.get("metadata") or {}
    state = []
    if meta.get("deletionTimestamp"):
        state.append(f"deletionTimestamp {meta['deletionTimestamp']}")
    if meta.get("finalizers"):
        state.append(f"finalizers {short(meta['finalizers'])}")
    held = f" ({', '.join(state)})" if state else ""
    return [f"{_ref_text(world, a.ref)} still exists{held}"]


def _conditions_of(live: Obj) -> dict[str, Obj]:
    conditions = (live.get("status") or {}).get("conditions") or []
    return {str(c.get("type")): c for c in conditions if isinstance(c, dict)}


def _condition_text(condition: Obj | None) -> str:
    if condition is None:
        return "Absent"
    message = condition.get("message")
    suffix = f" ({short(message, 160)})" if message else ""
    return f"{condition.get('status')}/{condition.get('reason')}{suffix}"


def _conditions(world: World, a: m.Assertion) -> Lines:
    assert isinstance(a, m.Conditions) and a.ref is not None
    live = _get(world, a.cluster, a.ref)
    if live is None:
        return _missing(world, a.ref, a.cluster)
    conditions = _conditions_of(live)
    lines = []
    for type_, want in a.expected:
        got = conditions.get(type_)
        if want == "Absent":
            ok = got is None
            wanted = "Absent"
        else:
            status, reason = want
            ok = got is not None and got.get("status") == status and (reason is None or got.get("reason") == reason)
            wanted = f"{status}/{reason}" if reason is not None else status
        if not ok:
            lines.append(f"{type_}: expected {wanted}, live {_condition_text(got)}")
    return lines


def _message(world: World, a: m.Assertion) -> Lines:
    assert isinstance(a, m.Message) and a.ref is not None
    live = _get(world, a.cluster, a.ref)
    if live is None:
        return _missing(world, a.ref, a.cluster)
    condition = _conditions_of(live).get(a.type)
    if condition is None:
        return [f"condition {a.type} is absent"]
    text = str(condition.get("message") or "")
    lines = []
    if a.contains is not None and a.contains not in text:
        lines.append(f"{a.type} message does not contain {a.contains!r}")
    if a.excludes is not None and a.excludes in text:
        lines.append(f"{a.type} message contains {a.excludes!r}")
    if lines:
        lines.append(f"live message: {text!r}")
    return lines


def _count(world: World, a: m.Assertion) -> Lines:
    assert isinstance(a, m.Count) and a.ref is not None
    api_version = world.api_version(a.ref)
    try:
        items = world.cluster(a.cluster).list(api_version, a.ref.kind, a.ref.namespace,
                                                   labels=dict(a.labels) or None).items
    except NotFound:
        items = []
    if len(items) == a.equals:
        return []
    names = [f"{(o['metadata'].get('namespace') or '') and o['metadata']['namespace'] + '/'}{o['metadata']['name']}"
             for o in items]
    shown = f": {', '.join(names[:10])}{' ...' if len(names) > 10 else ''}" if names else ""
    return [f"expected {a.equals}, live {len(items)}{shown}"]


def _requeue_after(world: World, a: m.Assertion) -> Lines:
    assert isinstance(a, m.RequeueAfter)
    if world.last_result is None:
        return ["no `reconcile` step ran before this assertion"]
    got = world.last_result.requeue_after
    if got == a.delta:
        return []
    return [f"expected {_duration(a.delta)}, the last reconcile asked for {_duration(got)}"]


def _secret_value(world: World, cluster: str, ref: m.Ref, key: str) -> tuple[str | None, str | None]:
    """(value, None) or (None, why it cannot be read)."""
    secret = _get(world, cluster, ref)
    where = f" on cluster {cluster!r}" if cluster else ""
    if secret is None:
        return None, f"{_ref_text(world, ref)} does not exist{where}"
    data = secret.get("data") or {}
    if key in data:
        try:
            return base64.b64decode(str(data[key]), validate=True).decode("utf-8"), None
        except (binascii.Error, UnicodeDecodeError, ValueError):
            return None, f"key {key!r} of {_ref_text(world, ref)}{where} is not base64 of UTF-8 text"
    string_data = secret.get("stringData") or {}
    if key in string_data:
        return str(string_data[key]), None
    keys = ", ".join(sorted([*data, *string_data])) or "none"
    return None, f"{_ref_text(world, ref)}{where} has no key {key!r} (keys: {keys})"


def _secret_data(world: World, a: m.Assertion) -> Lines:
    assert isinstance(a, m.SecretData) and a.ref is not None
    value, why = _secret_value(world, a.cluster, a.ref, a.key)
    if value is None:
        return [str(why)]
    if a.equals is not None:
        return [] if value == a.equals else [f"key {a.key!r} differs from the expected value "
                                             f"(live value hidden, {len(value)} chars)"]
    other = a.same_as or a.differs_from
    assert other is not None
    other_value, why = _secret_value(world, other.cluster, other.ref, other.key)
    if other_value is None:
        return [str(why)]
    if a.same_as is not None and value != other_value:
        return [f"key {a.key!r} differs from key {other.key!r} of {_ref_text(world, other.ref)} (values hidden)"]
    if a.differs_from is not None and value == other_value:
        return [f"key {a.key!r} equals key {other.key!r} of {_ref_text(world, other.ref)} (values hidden)"]
    return []


def _calls(world: World, a: m.Assertion) -> Lines:
    assert isinstance(a, m.Calls)
    if world.last_calls is None:
        return ["no `reconcile` step ran before this assertion"]
    wanted = [
        c for c in world.last_calls
        if (a.any_cluster or c.cluster == a.cluster)
        and (a.verbs is None or c.verb in a.verbs)
        and (a.api_version is None or c.api_version == a.api_version)
        and (a.kind is None or c.kind == a.kind)
        and (a.namespace is None or c.namespace == a.namespace)
        and (a.name is None or c.name == a.name)
    ]
    if len(wanted) == a.equals:
        return []
    lines = [f"expected {a.equals} matching call(s), the last reconcile made {len(wanted)}"]
    for c in wanted[:15]:
        where = f"[{c.cluster}] " if c.cluster else ""
        target = f" {c.namespace}/{c.name}" if c.namespace else (f" {c.name}" if c.name else "")
        failed = " (failed)" if c.failed else ""
        lines.append(f"  {where}{c.verb} {c.api_version}/{c.kind}{target}{failed}")
    if len(wanted) > 15:
        lines.append(f"  ... {len(wanted) - 15} more")
    return lines


def _metric(world: World, a: m.Assertion) -> Lines:
    assert isinstance(a, m.Metric)
    labels = dict(a.labels)
    got = world.registry.get_sample_value(a.name, labels) or 0.0
    if a.equals is not None and got == a.equals:
        return []
    if a.at_least is not None and got >= a.at_least:
        return []
    wanted = f"= {a.equals:g}" if a.equals is not None else f">= {a.at_least:g}"
    lines = [f"{a.name}{short(labels)}: expected {wanted}, live {got:g}"]
    samples = [
        f"  {s.name}{short(s.labels)} {s.value:g}"
        for family in world.registry.collect() for s in family.samples if s.name == a.name
    ]
    lines.extend(["samples of that name:", *samples] if samples else ["no sample of that name was ever observed"])
    return lines


def _no_secret_leak(world: World, a: m.Assertion) -> Lines:
    assert isinstance(a, m.NoSecretLeak)
    world.scan()
    return [f"a secret value ({length} chars) appears in {where}" for where, length in world.leaks.leaks()]


_CHECKS: dict[type[m.Assertion], Callable[[World, m.Assertion], Lines]] = {
    m.Present: _present,
    m.Absent: _absent,
    m.Conditions: _conditions,
    m.Message: _message,
    m.Count: _count,
    m.RequeueAfter: _requeue_after,
    m.SecretData: _secret_data,
    m.Calls: _calls,
    m.Metric: _metric,
    m.NoSecretLeak: _no_secret_leak,
}
