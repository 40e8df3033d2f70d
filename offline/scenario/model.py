"""A parsed scenario: plain frozen data, every element carrying the position it was written at.

The loader builds these from a file; the runner executes them. Object bodies are plain
JSON-compatible dicts (the loader strips ruamel's types), so nothing downstream sees YAML.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Literal

Obj = dict[str, Any]


@dataclass(frozen=True)
class Pos:
    """Where something starts in a scenario (or fixture) file, 1-based."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class ScenarioError(Exception):
    """A scenario file that cannot be run as written (exit status 2)."""

    def __init__(self, pos: Pos, message: str) -> None:
        super().__init__(f"{pos}: {message}")
        self.pos = pos
        self.message = message


class ScenarioErrors(Exception):
    """Every error found in one file, reported together."""

    def __init__(self, errors: list[ScenarioError]) -> None:
        super().__init__("\n".join(str(e) for e in errors))
        self.errors = errors


@dataclass(frozen=True)
class Ref:
    """An object reference; ``api_version`` is None where the scenario left it to be resolved."""

    api_version: str | None
    kind: str
    namespace: str | None
    name: str
    pos: Pos

    def describe(self, api_version: str | None = None) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{api_version or self.api_version or '?'}/{self.kind} {where}{self.name}"


@dataclass(frozen=True)
class Seed:
    """One object of the world before the first step."""

    obj: Obj
    cluster: str
    pos: Pos


@dataclass(frozen=True)
class Unserved:
    cluster: str
    api_version: str
    kind: str
    pos: Pos


# ---------------------------------------------------------------------------
# Steps.


@dataclass(frozen=True)
class Step:
    """What every step has: its 1-based index, position, cluster and expected error substrings."""

    index: int
    pos: Pos
    cluster: str
    expect_error: tuple[str, ...] | None

    verb = "step"

    def refs(self) -> tuple[Ref, ...]:
        """The references whose apiVersion may need resolving."""
        return ()


@dataclass(frozen=True)
class Create(Step):
    obj: Obj = field(default_factory=dict)
    ref: Ref | None = None
    verb = "create"

    def refs(self) -> tuple[Ref, ...]:
        return (self.ref,) if self.ref else ()


@dataclass(frozen=True)
class Update(Step):
    obj: Obj = field(default_factory=dict)
    ref: Ref | None = None
    verb = "update"

    def refs(self) -> tuple[Ref, ...]:
        return (self.ref,) if self.ref else ()


@dataclass(frozen=True)
class PatchStatus(Step):
    status: Obj = field(default_factory=dict)
    ref: Ref | None = None
    verb = "patchStatus"

    def refs(self) -> tuple[Ref, ...]:
        return (self.ref,) if self.ref else ()


@dataclass(frozen=True)
class Delete(Step):
    ref: Ref | None = None
    verb = "delete"

    def refs(self) -> tuple[Ref, ...]:
        return (self.ref,) if self.ref else ()


@dataclass(frozen=True)
class RemoveFinalizers(Step):
    ref: Ref | None = None
    verb = "removeFinalizers"

    def refs(self) -> tuple[Ref, ...]:
        return (self.ref,) if self.ref else ()


@dataclass(frozen=True)
class Settle(Step):
    verb = "settle"


@dataclass(frozen=True)
class Advance(Step):
    delta: dt.timedelta = dt.timedelta(0)
    verb = "advance"


@dataclass(frozen=True)
class Reconcile(Step):
    ref: Ref | None = None
    verb = "reconcile"

    def refs(self) -> tuple[Ref, ...]:
        return (self.ref,) if self.ref else ()


@dataclass(frozen=True)
class Fail(Step):
    call_verb: str | None = None
    api_version: str | None = None
    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    error: str = "ServerError"
    times: int = 1
    verb = "fail"


@dataclass(frozen=True)
class Serve(Step):
    api_version: str = ""
    kind: str = ""
    verb = "serve"


@dataclass(frozen=True)
class Register(Step):
    """Engage a target cluster again (its registration Secret written again)."""

    target: str = ""
    verb = "register"


@dataclass(frozen=True)
class Deregister(Step):
    """Disengage a target cluster (its registration Secret deleted); its objects stay."""

    target: str = ""
    verb = "deregister"


@dataclass(frozen=True)
class Unreachable(Step):
    """A registered target cluster stops answering: every call to it fails as a refused connection."""

    target: str = ""
    verb = "unreachable"


@dataclass(frozen=True)
class Reachable(Step):
    """A target cluster made unreachable answers again."""

    target: str = ""
    verb = "reachable"


@dataclass(frozen=True)
class Expect(Step):
    assertions: tuple[Assertion, ...] = ()
    verb = "expect"

    def refs(self) -> tuple[Ref, ...]:
        return tuple(ref for a in self.assertions for ref in a.refs())


# ---------------------------------------------------------------------------
# Assertions.


@dataclass(frozen=True)
class Assertion:
    """What every assertion has: its 1-based index within the expect step, position and cluster."""

    index: int
    pos: Pos
    cluster: str

    verb = "assertion"

    def refs(self) -> tuple[Ref, ...]:
        return ()


@dataclass(frozen=True)
class Present(Assertion):
    expected: Obj = field(default_factory=dict)
    ref: Ref | None = None
    verb = "present"

    def refs(self) -> tuple[Ref, ...]:
        return (self.ref,) if self.ref else ()


@dataclass(frozen=True)
class Absent(Assertion):
    ref: Ref | None = None
    verb = "absent"

    def refs(self) -> tuple[Ref, ...]:
        return (self.ref,) if self.ref else ()


ConditionCheck = tuple[str, str | None] | Literal["Absent"]
"""(status, reason or None to skip the reason) or "Absent"."""


@dataclass(frozen=True)
class Conditions(Assertion):
    ref: Ref | None = None
    expected: tuple[tuple[str, ConditionCheck], ...] = ()
    verb = "conditions"

    def refs(self) -> tuple[Ref, ...]:
        return (self.ref,) if self.ref else ()


@dataclass(frozen=True)
class Message(Assertion):
    ref: Ref | None = None
    type: str = ""
    contains: str | None = None
    excludes: str | None = None
    verb = "message"

    def refs(self) -> tuple[Ref, ...]:
        return (self.ref,) if self.ref else ()


@dataclass(frozen=True)
class Count(Assertion):
    ref: Ref | None = None
    """Kind and apiVersion (name unused); namespace None counts in every namespace."""
    labels: tuple[tuple[str, str], ...] = ()
    equals: int = 0
    verb = "count"

    def refs(self) -> tuple[Ref, ...]:
        return (self.ref,) if self.ref else ()


@dataclass(frozen=True)
class RequeueAfter(Assertion):
    delta: dt.timedelta | None = None
    verb = "requeueAfter"


@dataclass(frozen=True)
class SecretValue:
    """One Secret key somewhere: the other side of a ``sameAs`` / ``differsFrom``."""

    ref: Ref
    key: str
    cluster: str


@dataclass(frozen=True)
class SecretData(Assertion):
    ref: Ref | None = None
    key: str = ""
    equals: str | None = None
    same_as: SecretValue | None = None
    differs_from: SecretValue | None = None
    verb = "secretData"

    def refs(self) -> tuple[Ref, ...]:
        others = [v.ref for v in (self.same_as, self.differs_from) if v is not None]
        return tuple([self.ref, *others] if self.ref else others)


@dataclass(frozen=True)
class Calls(Assertion):
    any_cluster: bool = True
    """No ``cluster:`` beside it: count the calls to every cluster."""
    verbs: tuple[str, ...] | None = None
    api_version: str | None = None
    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    equals: int = 0
    verb = "calls"


@dataclass(frozen=True)
class Metric(Assertion):
    name: str = ""
    labels: tuple[tuple[str, str], ...] = ()
    equals: float | None = None
    at_least: float | None = None
    verb = "metric"


@dataclass(frozen=True)
class NoSecretLeak(Assertion):
    verb = "noSecretLeak"


# ---------------------------------------------------------------------------
# The file.


DEFAULT_NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Scenario:
    path: str
    title: str
    pos: Pos
    rules: tuple[tuple[str, Pos], ...] | None
    clusters: tuple[str, ...]
    unserved: tuple[Unserved, ...]
    now: dt.datetime
    objects: tuple[Seed, ...]
    steps: tuple[Step, ...]
