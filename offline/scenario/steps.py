"""What each step does to the world. A step that does not go as written raises StepFailed.

Writes (create, update, patchStatus, delete, removeFinalizers) go to the memory cluster
directly, as a user or an external controller would, with admission where a CRD is
installed. The operator's steps (settle, advance, reconcile) go through the manager.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from engine.cluster.api import ApiError, Call, Obj
from engine.outcome import Request
from engine.runtime.manager import SettleLoop
from offline.scenario import model as m
from offline.scenario.assertions import check, describe
from offline.scenario.world import World

__all__ = ["StepFailed", "run_step"]


class StepFailed(Exception):
    """The step did not go as the scenario says; ``lines`` explain why."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


def run_step(world: World, step: m.Step) -> None:
    _STEPS[type(step)](world, step)
    world.scan()


def error_text(exc: BaseException) -> str:
    """An API error as a user reads it: reason, message and field causes."""
    if isinstance(exc, ApiError):
        causes = "; ".join(f"{c.field}: {c.message}" for c in exc.causes)
        return f"{exc.reason}: {exc.message}" + (f" ({causes})" if causes else "")
    return f"{type(exc).__name__}: {exc}"


def _expect(step: m.Step, error: BaseException | None, what: str,
            redact: Callable[[str], str] = lambda text: text) -> None:
    """Compare the step's outcome with its ``expectError``; ``redact`` hides secrets in what is shown."""
    if error is None:
        if step.expect_error is not None:
            raise StepFailed([f"expected {what} to fail with an error containing "
                              f"{' and '.join(repr(s) for s in step.expect_error)}, but it succeeded"])
        return
    text = error_text(error)
    if step.expect_error is None:
        raise StepFailed([f"{what} failed: {redact(text)}"])
    missing = [s for s in step.expect_error if s not in text]
    if missing:
        raise StepFailed([f"{what} failed, but the error lacks {' and '.join(repr(s) for s in missing)}",
                          f"the error: {redact(text)}"])


def _write(world: World, step: m.Step, what: str, action: Callable[[], Any]) -> None:
    try:
        action()
    except ApiError as exc:
        _expect(step, exc, what)
        return
    _expect(step, None, what)


def _ref_args(world: World, ref: m.Ref | None) -> tuple[str, str, str | None, str]:
    assert ref is not None
    return world.api_version(ref), ref.kind, ref.namespace, ref.name


def _create(world: World, step: m.Step) -> None:
    assert isinstance(step, m.Create)
    cluster = world.cluster(step.cluster)
    _write(world, step, "the create", lambda: cluster.create(copy.deepcopy(step.obj)))


def _update(world: World, step: m.Step) -> None:
    assert isinstance(step, m.Update)
    patch: Obj = {k: copy.deepcopy(v) for k, v in step.obj.items() if k not in ("status", "apiVersion", "kind")}
    cluster = world.cluster(step.cluster)
    args = _ref_args(world, step.ref)
    _write(world, step, "the update", lambda: cluster.patch(*args, patch))


def _patch_status(world: World, step: m.Step) -> None:
    assert isinstance(step, m.PatchStatus)
    cluster = world.cluster(step.cluster)
    api_version, kind, namespace, name = _ref_args(world, step.ref)

    def patch() -> None:
        # A kind without a status subresource (core kinds here) takes status in a plain patch.
        subresource = cluster.resource_info(api_version, kind).status_subresource
        cluster.patch(api_version, kind, namespace, name, {"status": copy.deepcopy(step.status)}, status=subresource)

    _write(world, step, "the status patch", patch)


def _delete(world: World, step: m.Step) -> None:
    assert isinstance(step, m.Delete)
    cluster = world.cluster(step.cluster)
    args = _ref_args(world, step.ref)
    _write(world, step, "the delete", lambda: cluster.delete(*args))


def _remove_finalizers(world: World, step: m.Step) -> None:
    assert isinstance(step, m.RemoveFinalizers)
    cluster = world.cluster(step.cluster)
    args = _ref_args(world, step.ref)
    _write(world, step, "removing the finalizers", lambda: cluster.patch(*args, {"metadata": {"finalizers": None}}))


def _settle(world: World, step: m.Step) -> None:
    try:
        world.manager.settle()
    except SettleLoop as exc:
        raise StepFailed([str(exc)]) from None


def _advance(world: World, step: m.Step) -> None:
    assert isinstance(step, m.Advance)
    try:
        world.manager.advance(step.delta)
    except SettleLoop as exc:
        raise StepFailed([str(exc)]) from None


def _reconcile(world: World, step: m.Step) -> None:
    assert isinstance(step, m.Reconcile) and step.ref is not None
    request = Request(world.resolved.kind_key(step.ref), step.cluster, step.ref.namespace or "", step.ref.name)
    world.take_calls()
    own: list[Call] = []
    try:
        result = world.manager.reconcile(request, pass_done=lambda: own.extend(world.take_calls()))
    finally:
        world.take_calls()  # the watches the runtime pumps after the pass are not the pass's calls
        world.last_calls = own
    world.last_result = result
    if result.error is not None:
        world.leaks.add_text(f"the error of the pass in step {step.index}", str(result.error))
    _expect(step, result.error, f"the pass of {request}", world.leaks.redact)


def _fail(world: World, step: m.Step) -> None:
    assert isinstance(step, m.Fail)
    world.faulty[step.cluster].inject(verb=step.call_verb, api_version=step.api_version, kind=step.kind,
                                      namespace=step.namespace, name=step.name, error=step.error, times=step.times)


def _serve(world: World, step: m.Step) -> None:
    assert isinstance(step, m.Serve)
    world.cluster(step.cluster).serve(step.api_version, step.kind)
    world.kinds.add((step.api_version, step.kind))


def _register(world: World, step: m.Step) -> None:
    assert isinstance(step, m.Register)
    world.manager.engage(step.target, world.faulty[step.target])


def _deregister(world: World, step: m.Step) -> None:
    assert isinstance(step, m.Deregister)
    world.manager.disengage(step.target)


def _unreachable(world: World, step: m.Step) -> None:
    assert isinstance(step, m.Unreachable)
    world.faulty[step.target].unreachable = True


def _reachable(world: World, step: m.Step) -> None:
    assert isinstance(step, m.Reachable)
    world.faulty[step.target].unreachable = False


def _expect_step(world: World, step: m.Step) -> None:
    assert isinstance(step, m.Expect)
    lines: list[str] = []
    for assertion in step.assertions:
        failed = check(world, assertion)
        if failed:
            lines.append(f"assertion {assertion.index} ({describe(world, assertion)}) at {assertion.pos}:")
            lines.extend(f"  {line}" for line in failed)
    if lines:
        raise StepFailed(lines)


_STEPS: dict[type[m.Step], Callable[[World, m.Step], None]] = {
    m.Create: _create,
    m.Update: _update,
    m.PatchStatus: _patch_status,
    m.Delete: _delete,
    m.RemoveFinalizers: _remove_finalizers,
    m.Settle: _settle,
    m.Advance: _advance,
    m.Reconcile: _reconcile,
    m.Fail: _fail,
    m.Serve: _serve,
    m.Register: _register,
    m.Deregister: _deregister,
    m.Unreachable: _unreachable,
    m.Reachable: _reachable,
    m.Expect: _expect_step,
}
