"""Generated request sequences (hypothesis strategies) over a small world: three ConfigMaps and a Deployment in the
case's namespace, a few labels, data keys, finalizers and field managers, so that generated steps keep meeting
each other (a patch after a create, a conflict after an update, a watch that sees it all).

Each sequence is a Case: writes of every kind the API offers (create, update with and without a resourceVersion,
JSON merge, JSON patch and strategic merge patches with directives, server-side apply with conflicts and force,
delete, finalizers), reads (get, lists with label and field selectors, Tables) and, last, a watch from the first
answer's resourceVersion that ends at a sentinel.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tests.differential.harness import APPLY, JSON_PATCH, MERGE, STRATEGIC, TABLE, Call, Case, call
from tests.differential.objects import CM, DEPLOYMENTS, configmap

NAMES = ("a", "b", "c")
LABEL_KEYS = ("tier", "app")
LABEL_VALUES = ("db", "web", "")
DATA_KEYS = ("k1", "k2", "k3")
DATA_VALUES = ("v1", "v2", "")
FINALIZERS = ("a.io/x", "b.io/y")
MANAGERS = ("alice", "bob")

names = st.sampled_from(NAMES)
labels = st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES), max_size=2)
data = st.dictionaries(st.sampled_from(DATA_KEYS), st.sampled_from(DATA_VALUES), max_size=3)
finalizers = st.lists(st.sampled_from(FINALIZERS), max_size=2, unique=True)


def _cm(name: str, with_labels: dict[str, str], with_data: dict[str, str], with_finalizers: list[str]) -> Any:
    body: dict[str, Any] = configmap(name, with_labels or None, **with_data)
    if with_finalizers:
        body["metadata"]["finalizers"] = with_finalizers
    return body


@st.composite
def label_selectors(draw: st.DrawFn) -> str:
    """A selector of one or two requirements over the label vocabulary, every operator the API knows."""
    parts = []
    for key in draw(st.lists(st.sampled_from(LABEL_KEYS), min_size=1, max_size=2, unique=True)):
        value = draw(st.sampled_from(LABEL_VALUES))
        other = draw(st.sampled_from(LABEL_VALUES))
        parts.append(draw(st.sampled_from([
            f"{key}={value}", f"{key}=={value}", f"{key}!={value}", key, f"!{key}", f"{key} in ({value},{other})",
            f"{key} notin ({value})", f"{key} in ()"])))
    return ",".join(parts)


field_selectors = st.sampled_from(["metadata.name=a", "metadata.name!=b", "metadata.namespace={ns}",
                                   "metadata.name=a,metadata.name!=a", "metadata.name==c"])


@st.composite
def configmap_steps(draw: st.DrawFn, index: int) -> Call:
    """One step on the ConfigMaps; earlier steps are named s0, s1... for resourceVersion references."""
    name = draw(names)
    path = f"{CM}/{name}"
    earlier = st.sampled_from([f"s{i}" for i in range(index)]) if index else st.just("s0")
    kind = draw(st.sampled_from(["create", "create", "get", "list", "table", "update", "merge", "json", "strategic",
                                 "apply", "apply", "delete"]))
    step = f"s{index}"
    if kind == "create":
        return call("POST", CM, _cm(name, draw(labels), draw(data), draw(finalizers)), name=step)
    if kind == "get":
        return call("GET", path, name=step)
    if kind == "list":
        query: dict[str, str] = {}
        if draw(st.booleans()):
            query["labelSelector"] = draw(label_selectors())
        if draw(st.booleans()):
            query["fieldSelector"] = draw(field_selectors)
        return call("GET", CM, name=step, **query)
    if kind == "table":
        return call("GET", CM, accept=TABLE, name=step)
    if kind == "update":
        body = _cm(name, draw(labels), draw(data), draw(finalizers))
        if draw(st.booleans()):
            body["metadata"]["resourceVersion"] = f"$rv({draw(earlier)})"
        return call("PUT", path, body, name=step)
    if kind == "merge":
        patch: dict[str, Any] = {"data": draw(st.dictionaries(st.sampled_from(DATA_KEYS),
                                                             st.sampled_from((*DATA_VALUES, None)), max_size=2))}
        if draw(st.booleans()):
            patch["metadata"] = {"labels": draw(st.dictionaries(st.sampled_from(LABEL_KEYS),
                                                                st.sampled_from((*LABEL_VALUES, None)), max_size=2))}
        if draw(st.booleans()):
            patch.setdefault("metadata", {})["finalizers"] = draw(finalizers) or None
        return call("PATCH", path, patch, content_type=MERGE, name=step)
    if kind == "json":
        key = draw(st.sampled_from(DATA_KEYS))
        op = draw(st.sampled_from(["add", "replace", "remove", "test"]))
        operation: dict[str, Any] = {"op": op, "path": f"/data/{key}"}
        if op != "remove":
            operation["value"] = draw(st.sampled_from(DATA_VALUES))
        return call("PATCH", path, [operation], content_type=JSON_PATCH, name=step)
    if kind == "strategic":
        patch = {"data": draw(st.dictionaries(st.sampled_from(DATA_KEYS), st.sampled_from((*DATA_VALUES, None)),
                                              max_size=2))}
        directive = draw(st.sampled_from(["none", "finalizers", "delete", "order"]))
        if directive == "finalizers":
            patch["metadata"] = {"finalizers": draw(finalizers)}
        elif directive == "delete":
            patch["metadata"] = {"$deleteFromPrimitiveList/finalizers": draw(finalizers)}
        elif directive == "order":
            order = draw(finalizers)
            patch["metadata"] = {"$setElementOrder/finalizers": order, "finalizers": order[:1]}
        return call("PATCH", path, patch, content_type=STRATEGIC, name=step)
    if kind == "apply":
        body = _cm(name, draw(labels), draw(data), [])
        query = {"fieldManager": draw(st.sampled_from(MANAGERS))}
        if draw(st.booleans()):
            query["force"] = "true"
        return call("PATCH", path, body, content_type=APPLY, name=step, **query)
    return call("DELETE", path, name=step)


CONTAINERS = ("main", "side")
ENV = ("A", "B")


@st.composite
def containers(draw: st.DrawFn) -> list[dict[str, Any]]:
    found = []
    for name in draw(st.lists(st.sampled_from(CONTAINERS), min_size=1, max_size=2, unique=True)):
        container: dict[str, Any] = {"name": name, "image": draw(st.sampled_from(["nginx", "nginx:1.27", "x:latest"]))}
        env = draw(st.lists(st.sampled_from(ENV), max_size=2, unique=True))
        if env:
            container["env"] = [{"name": e, "value": draw(st.sampled_from(DATA_VALUES))} for e in env]
        if draw(st.booleans()):
            port = draw(st.sampled_from([80, 8080]))
            container["ports"] = [{"containerPort": port, "name": f"p{port}"}]  # a name per port: merges stay valid
        found.append(container)
    return found


def _deployment(spec_containers: list[dict[str, Any]], replicas: int | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": "d"}}, "template": {
        "metadata": {"labels": {"app": "d"}}, "spec": {"containers": spec_containers}}}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": spec}


@st.composite
def deployment_steps(draw: st.DrawFn, index: int) -> Call:
    """One step on the Deployment: strategic merge patches on its containers above all."""
    path = f"{DEPLOYMENTS}/d"
    step = f"s{index}"
    kind = draw(st.sampled_from(["create", "strategic", "strategic", "strategic", "apply", "merge", "get"]))
    if kind == "create":
        return call("POST", DEPLOYMENTS, _deployment(draw(containers()), draw(st.sampled_from([None, 0, 2]))),
                    name=step)
    if kind == "get":
        return call("GET", path, name=step)
    if kind == "apply":
        return call("PATCH", path, _deployment(draw(containers()), draw(st.sampled_from([None, 3]))),
                    content_type=APPLY, fieldManager=draw(st.sampled_from(MANAGERS)), name=step)
    if kind == "merge":
        return call("PATCH", path, {"spec": {"replicas": draw(st.sampled_from([1, 4]))}}, content_type=MERGE,
                    name=step)
    patched = draw(containers())
    spec: dict[str, Any] = {"containers": patched}
    directive = draw(st.sampled_from(["none", "order", "delete", "replace"]))
    if directive == "order":
        order = draw(st.permutations(list(CONTAINERS)))
        spec["$setElementOrder/containers"] = [{"name": n} for n in order if n in {c["name"] for c in patched}]
    elif directive == "delete":
        spec["containers"] = [*patched, {"name": draw(st.sampled_from(CONTAINERS)), "$patch": "delete"}]
    elif directive == "replace":
        spec["containers"] = [{"$patch": "replace"}, *patched]
    return call("PATCH", path, {"spec": {"template": {"spec": spec}}}, content_type=STRATEGIC, name=step)


@st.composite
def cases(draw: st.DrawFn, steps: Any = configmap_steps, max_steps: int = 6) -> Case:
    """A sequence of steps, then a watch from the first answer's resourceVersion (possibly label-selected) that
    ends at a sentinel the selector lets through."""
    count = draw(st.integers(min_value=1, max_value=max_steps))
    sequence = [draw(steps(index)) for index in range(count)]
    query: dict[str, str] = {}
    sentinel_labels: dict[str, str] = {}
    if draw(st.booleans()):
        value = draw(st.sampled_from(LABEL_VALUES[:2]))
        query["labelSelector"] = f"tier={value}"
        sentinel_labels = {"tier": value}
    path = DEPLOYMENTS if steps is deployment_steps else CM
    sentinel: dict[str, Any] = configmap("zz-sentinel", sentinel_labels or None) if path == CM else _deployment(
        [{"name": "main", "image": "nginx"}], None)
    sentinel["metadata"]["name"] = "zz-sentinel"
    if path == DEPLOYMENTS:
        query.pop("labelSelector", None)
    sequence.append(call("GET", path, watch=1, resourceVersion="$rv(s0)", timeoutSeconds=5, sentinel=sentinel,
                         **query))
    return Case("generated", sequence)
