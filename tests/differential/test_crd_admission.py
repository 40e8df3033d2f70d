"""Written cases: custom resources created, updated, patched and applied through a CRD's schema on the real server,
the HTTP emulator and a MemoryCluster: defaults, pruning, preserved and embedded fields, validation errors
(causes with field paths and messages), CEL rules, transition rules on ``oldSelf``, ratcheting of unchanged
invalid values, generation; and on the HTTP legs Strict/Warn/Ignore field validation and printer columns."""

from __future__ import annotations

import pytest

from tests.differential import crd_kinds
from tests.differential.crd_kinds import CRD_KEPT, RATCHETS_V1, RATCHETS_V2, WIDGETS, W, apply, merge, ratchet, widget
from tests.differential.harness import JSON_PATCH, TABLE, Case, Kept, Runner, call, differences, report

crd_runner = crd_kinds.crd_runner
crd_http_runner = crd_kinds.crd_http_runner
crd_bare_runner = crd_kinds.crd_bare_runner

@pytest.mark.parametrize("kept", CRD_KEPT, ids=[k.name for k in CRD_KEPT])
def test_the_kept_difference_still_happens(crd_bare_runner: Runner, kept: Kept) -> None:
    """Each kept difference still happens, and is the one its entry names."""
    found = crd_bare_runner.run(kept.case)
    assert found, f"{kept.name}: the real server and the emulators now agree; remove the entry"
    for divergence in found:
        names = list(divergence.answers)
        for other in names[1:]:
            for path, _, _ in differences(divergence.answers[names[0]], divergence.answers[other]):
                assert kept.covers(divergence.request, path), f"{kept.name} does not cover:\n{divergence}"


CASES = [
    Case("defaults: absent fields, nested objects, map-list items", [
        call("POST", WIDGETS, widget(size=1)),
        call("POST", WIDGETS, widget("b", size=2, nested={"b": 3}, ports=[{"name": "http"}, {"name": "dns",
                                                                                              "protocol": "UDP"}])),
        call("POST", WIDGETS, widget("c", size=0, mode=None, max=None, nested=None)),
        call("GET", WIDGETS + "/b"),
        call("GET", WIDGETS),
    ]),
    Case("pruning: unknown fields go, preserved and embedded ones stay", [
        call("POST", WIDGETS, {**widget(size=1, colour="red", nested={"a": "y", "z": 1},
                                        extra={"anything": {"deep": [1, {"x": None}]}},
                                        template={"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p",
                                                                                                  "junk": 1},
                                                  "spec": {"free": "form"}},
                                        ports=[{"name": "a", "bogus": True}]),
                              "status": {"phase": "set-on-create"}, "toplevel": 1}),
        call("GET", W),
    ]),
    Case("nulls: a nullable field keeps its null, another loses it, a default fills it", [
        call("POST", WIDGETS, widget(size=1, maybe=None, nested={"b": None}, when=None, mode=None)),
        merge(W, {"spec": {"maybe": "x", "nested": {"b": 1}}}),
        merge(W, {"spec": {"maybe": None}}),
    ]),
    Case("schema errors: each cause with its field path and message", [
        call("POST", WIDGETS, widget(size=-1)),
        call("POST", WIDGETS, widget(size="one")),
        call("POST", WIDGETS, widget(size=1.5)),
        call("POST", WIDGETS, widget()),
        call("POST", WIDGETS, widget(size=1, mode="medium")),
        call("POST", WIDGETS, widget(size=1, name="Bad_Name")),
        call("POST", WIDGETS, widget(size=1, name="much-too-long-a-name")),
        call("POST", WIDGETS, widget(size=1, ratio=0)),
        call("POST", WIDGETS, widget(size=1, ratio=1.5)),
        call("POST", WIDGETS, widget(size=1, port=True)),
        call("POST", WIDGETS, widget(size=1, port=1.5)),
        call("POST", WIDGETS, widget(size=1, when="yesterday")),
        call("POST", WIDGETS, widget(size=1, tags=["a", "b", "a"])),
        call("POST", WIDGETS, widget(size=1, tags=["a", "b", "c", "d", "e"])),
        call("POST", WIDGETS, widget(size=1, ports=[{"name": "a"}, {"name": "a", "port": 81}])),
        call("POST", WIDGETS, widget(size=1, ports=[{"port": 81}])),
        call("POST", WIDGETS, widget(size=1, labels={"a": "1", "b": "2", "c": "3", "d": "4"})),
        call("POST", WIDGETS, widget(size=1, labels={"a": "much too long value"})),
        call("POST", WIDGETS, widget(size=1, max=1000, mode="locked", tags="a", nested=[])),
    ]),
    Case("CEL rules: messages, message expressions, reasons, field paths", [
        call("POST", WIDGETS, widget("a", size=11)),
        call("POST", WIDGETS, widget("b", size=20, max=30)),
        call("POST", WIDGETS, widget("c", size=3, mode="locked")),
        call("POST", WIDGETS, widget("d", size=3, mode="locked", max=1)),
        call("POST", WIDGETS, widget("e", size=1, ports=[{"name": "a", "port": 0}, {"name": "b", "port": -1}])),
        call("POST", WIDGETS, widget("f", size=1, every="30s")),
        call("POST", WIDGETS, widget("g", size=1, every="2m")),
        call("POST", WIDGETS, widget("h", size=1, every="soon")),
        call("POST", WIDGETS, widget("b", size=50)),
    ]),
    Case("schema errors block the rules", [
        call("POST", WIDGETS, widget(size=50, mode="bogus")),
        call("POST", WIDGETS, widget(size=50, ratio=2)),
    ]),
    Case("transition rules: immutable, monotonic, correlated map-list items", [
        call("POST", WIDGETS, widget(size=1, name="first", generation=2, ports=[{"name": "fixed", "port": 8080},
                                                                                  {"name": "free", "port": 1}])),
        merge(W, {"spec": {"name": "second"}}),
        merge(W, {"spec": {"generation": 1}}),
        merge(W, {"spec": {"generation": 3}}),
        merge(W, {"spec": {"ports": [{"name": "fixed", "port": 9090}, {"name": "free", "port": 2}]}}),
        merge(W, {"spec": {"ports": [{"name": "free", "port": 2}, {"name": "fixed", "port": 8080}]}}),
        merge(W, {"spec": {"name": None}}),
        call("GET", W),
    ]),
    Case("optionalOldSelf: rules that run with or without an old value", [
        call("POST", WIDGETS, widget(size=1)),
        merge(W, {"spec": {"grace": "a"}}),
        merge(W, {"spec": {"grace": "b"}}),
        merge(W, {"spec": {"grace": None}}),
        merge(W, {"spec": {"grace": "locked"}}),
        call("POST", WIDGETS, widget("x", size=1, grace="locked")),
        merge(WIDGETS + "/x", {"spec": {"grace": "locked"}}),
        merge(WIDGETS + "/x", {"spec": {"grace": "other"}}),
    ]),
    Case("ratcheting: an invalid value written through v1 survives updates through v2 that leave it alone", [
        call("POST", RATCHETS_V1, ratchet(limit=51, note="a long note", items=["a", "c"], other=1)),
        call("GET", RATCHETS_V2 + "/r"),
        merge(RATCHETS_V2 + "/r", {"spec": {"other": 2}}),
        merge(RATCHETS_V2 + "/r", {"spec": {"limit": 53}}),
        merge(RATCHETS_V2 + "/r", {"spec": {"note": "another long note"}}),
        merge(RATCHETS_V2 + "/r", {"spec": {"items": ["a", "d"]}}),
        merge(RATCHETS_V2 + "/r", {"spec": {"limit": 8}}),
        merge(RATCHETS_V2 + "/r", {"spec": {"limit": 9}}),
        call("GET", RATCHETS_V2 + "/r", name="now"),
        call("PUT", RATCHETS_V2 + "/r", {**ratchet(version="v2", limit=8, note="a long note", items=["a", "c"],
                                                   other=5), "metadata": {"name": "r", "resourceVersion": "$rv(now)"}}),
        call("POST", RATCHETS_V2, ratchet("s", version="v2", limit=51)),
    ]),
    Case("ratcheting: a rule's failure is kept where its own node is unchanged, an evaluation error never", [
        call("POST", RATCHETS_V1, ratchet(other=7, code=-1)),
        merge(RATCHETS_V2 + "/r", {"spec": {"note": "ok"}}),
        call("POST", RATCHETS_V1, ratchet("p", code=-1)),
        merge(RATCHETS_V2 + "/p", {"spec": {"note": "ok"}}),
        call("POST", RATCHETS_V1, ratchet("q", code="abc")),
        merge(RATCHETS_V2 + "/q", {"spec": {"note": "ok"}}),
        merge(RATCHETS_V2 + "/q", {"metadata": {"labels": {"a": "b"}}}),
        call("POST", RATCHETS_V1, ratchet("t", ref="cp")),
        merge(RATCHETS_V2 + "/t", {"spec": {"note": "ok"}}),
        merge(RATCHETS_V1 + "/t", {"spec": {"note": "ok"}}),
    ]),
    Case("a rule on the object's name refuses every write of an object stored past it, a finalizer's removal too", [
        call("POST", RATCHETS_V1, {**ratchet("ten-bytes0"), "metadata": {"name": "ten-bytes0",
                                                                           "finalizers": ["example.com/hold"]}}),
        merge(RATCHETS_V2 + "/ten-bytes0", {"metadata": {"labels": {"a": "b"}}}),
        call("DELETE", RATCHETS_V2 + "/ten-bytes0"),
        merge(RATCHETS_V2 + "/ten-bytes0", {"metadata": {"finalizers": None}}),
        call("GET", RATCHETS_V2 + "/ten-bytes0"),
        merge(RATCHETS_V1 + "/ten-bytes0", {"metadata": {"finalizers": None}}),
    ]),
    Case("allOf: each branch's error, then the allOf's own", [
        call("POST", WIDGETS, widget("a", size=1, bounded=0)),
        call("POST", WIDGETS, widget("b", size=1, bounded=5)),
        merge(WIDGETS + "/b", {"spec": {"bounded": 10}}),
    ]),
    Case("a strict merge patch's unknown field", [
        call("POST", WIDGETS, widget(size=1)),
        merge(W, {"spec": {"shade": "dark"}}, fieldValidation="Strict"),
        merge(W, {"spec": {"shade": "dark", "size": 2}}, fieldValidation="Warn"),
    ]),
    Case("generation: spec changes count, status and metadata do not", [
        call("POST", WIDGETS, widget(size=1), name="w"),
        merge(W, {"metadata": {"labels": {"a": "b"}}}),
        merge(W, {"spec": {"size": 2}}),
        merge(W, {"spec": {"size": 2}}),
        call("PUT", W, {**widget(size=3), "metadata": {"name": "w", "resourceVersion": "$rv(w)"}}),
        call("GET", W, name="now"),
        call("PUT", W, {**widget(size=3), "metadata": {"name": "w", "resourceVersion": "$rv(now)"}}),
        merge(W, {"spec": {"colour": "ignored"}}),
        merge(W + "/status", {"status": {"phase": "Ready", "ready": True}}),
        merge(W + "/status", {"status": {"phase": "Ready", "ready": True}}),
        call("GET", W),
    ]),
    Case("JSON patch and update through the schema", [
        call("POST", WIDGETS, widget(size=1, tags=["a"])),
        call("PATCH", W, [{"op": "add", "path": "/spec/tags/-", "value": "b"}], content_type=JSON_PATCH),
        call("PATCH", W, [{"op": "add", "path": "/spec/tags/-", "value": "a"}], content_type=JSON_PATCH),
        call("PATCH", W, [{"op": "replace", "path": "/spec/size", "value": 12}], content_type=JSON_PATCH),
        call("PATCH", W, [{"op": "remove", "path": "/spec/max"}], content_type=JSON_PATCH, name="now"),
        call("PUT", W, {**widget(size=2, junk=1), "metadata": {"name": "w", "resourceVersion": "$rv(now)"}}),
    ]),
    Case("server-side apply: defaults, pruning and validation", [
        apply(W, widget(size=1, ports=[{"name": "a"}])),
        apply(W, widget(size=1, ports=[{"name": "a"}, {"name": "b", "port": 81}])),
        apply(W, widget(size=50)),
        apply(W, widget(size=1, mode="locked")),
        call("GET", W),
    ]),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_legs_agree(crd_runner: Runner, case: Case) -> None:
    found = crd_runner.run(case)
    assert not found, report(found)


HTTP_CASES = [
    Case("field validation: Strict refuses unknown fields, Warn tells them, Ignore drops them", [
        call("POST", WIDGETS, widget("s", size=1, colour="red", nested={"z": 1}), fieldValidation="Strict"),
        call("POST", WIDGETS, widget("w", size=1, colour="red", nested={"z": 1}), fieldValidation="Warn"),
        call("POST", WIDGETS, widget("i", size=1, colour="red"), fieldValidation="Ignore"),
        call("POST", WIDGETS, widget("d", size=1, colour="red")),
        merge(WIDGETS + "/w", {"spec": {"extra": {"free": 1}}}, fieldValidation="Strict"),
        merge(WIDGETS + "/w", {"spec": {"shade": "dark"}}, fieldValidation="Strict"),
        merge(WIDGETS + "/w", {"spec": {"shade": "dark"}}, fieldValidation="Warn"),
        merge(WIDGETS + "/w", {"spec": {"shade": "dark"}}, fieldValidation="Ignore", name="now"),
        apply(WIDGETS + "/a", widget("a", size=1, shade="dark"), fieldValidation="Strict"),
        apply(WIDGETS + "/a", widget("a", size=1, shade="dark"), fieldValidation="Warn"),
        apply(WIDGETS + "/a", widget("a", size=1, shade="dark"), fieldValidation="Ignore"),
        apply(WIDGETS + "/a", {**widget("a", size=1), "metadata": {"name": "a", "namespace": "{ns}"}},
              fieldValidation="Strict"),
        call("PUT", WIDGETS + "/w", {**widget("w", size=2, shade="x"), "metadata": {"name": "w",
                                                                                  "resourceVersion": "$rv(now)"}},
             fieldValidation="Strict"),
        call("PUT", WIDGETS + "/w", {**widget("w", size=2, shade="x"), "metadata": {"name": "w",
                                                                                  "resourceVersion": "$rv(now)"}},
             fieldValidation="Warn"),
    ]),
    Case("dry-run create and update run admission and store nothing", [
        call("POST", WIDGETS, widget(size=1, colour="red"), dryRun="All"),
        call("POST", WIDGETS, widget(size=50), dryRun="All"),
        call("GET", W),
        call("POST", WIDGETS, widget(size=1)),
        merge(W, {"spec": {"size": 2}}, dryRun="All"),
        merge(W, {"spec": {"size": 20}}, dryRun="All"),
        apply(WIDGETS + "/new", widget("new", size=3), dryRun="All"),
        call("GET", W),
    ]),
    Case("printer columns: the Table kubectl get shows", [
        call("POST", WIDGETS, widget("a", size=1, when="2026-01-01T00:00:00Z", ports=[{"name": "x"}, {"name": "y"}])),
        call("POST", WIDGETS, widget("b", size=2, mode="slow")),
        merge(WIDGETS + "/b/status", {"status": {"ready": True}}),
        call("GET", WIDGETS, accept=TABLE),
        call("GET", WIDGETS + "/a", accept=TABLE),
        call("GET", WIDGETS, accept=TABLE, includeObject="Object"),
    ]),
]


@pytest.mark.parametrize("case", HTTP_CASES, ids=[c.name for c in HTTP_CASES])
def test_the_http_legs_agree(crd_http_runner: Runner, case: Case) -> None:
    found = crd_http_runner.run(case)
    assert not found, report(found)
