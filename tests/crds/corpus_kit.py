"""The CRD corpus: small CustomResourceDefinitions, good ones and ones bad in one way each, and the answers a real
API server gave to their creation, so our checks (``crd_check.crd_refusal``) can be held to them.

A case in ``corpus/*.yaml`` is a mapping: ``id`` (unique), ``why`` (what it shows) and edits of the base CRD
(``BASE``, a one-version namespaced Widget that installs), applied in this order: ``crd`` (the whole object instead
of the base), ``spec`` (a JSON merge patch of spec), ``names`` (merged into spec.names), ``version`` (merged into
the first version), ``versions`` (instead of all versions), ``schema`` (instead of the first version's
openAPIV3Schema; null removes the schema), ``spec_schema`` (instead of that schema's ``spec`` property),
``metadata`` (merged into metadata). Unless ``metadata`` names it, the CRD is called ``<plural>.<group>``.

An answer is what creating the CRD (server-side dry run, ``fieldValidation=Strict`` as kubectl sends it) returned:
``{"status": 201}``, or the status code and its causes as ``[field, message]`` pairs (422), or its message (other
codes). ``python -m tests.crds.corpus_kit record`` asks a real server again and rewrites ``corpus/answers.json``.
"""

from __future__ import annotations

import copy
import json
import ssl
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from engine.cluster.patches import merge_patch

Obj = dict[str, Any]

CORPUS = Path(__file__).resolve().parent / "corpus"
ANSWERS = CORPUS / "answers.json"
CRDS_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

BASE_SCHEMA: Obj = {
    "type": "object",
    "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer"}, "mode": {"type": "string"}}},
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
    },
}
BASE: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
        "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": BASE_SCHEMA}}],
    },
}
EDITS = ("crd", "spec", "names", "version", "versions", "schema", "spec_schema", "metadata")


@dataclass(frozen=True)
class Case:
    """One corpus entry: its id, why it is there, the file it is in, and the CRD it builds."""

    id: str
    why: str
    file: str
    crd: Obj


def build(case: Obj) -> Obj:
    """The CRD a case describes (see the module's docstring for the edits and their order)."""
    unknown = set(case) - {"id", "why", *EDITS}
    if unknown:
        raise ValueError(f"case {case.get('id')!r}: unknown keys {sorted(unknown)}")
    crd: Obj = copy.deepcopy(case.get("crd", BASE))
    if "crd" in case:
        return crd
    if "spec" in case:
        crd["spec"] = merge_patch(crd["spec"], case["spec"])
    spec = crd["spec"]
    if "names" in case:
        spec["names"] = merge_patch(spec["names"], case["names"])
    if "version" in case:
        spec["versions"][0] = merge_patch(spec["versions"][0], case["version"])
    if "versions" in case:
        spec["versions"] = copy.deepcopy(case["versions"])
    if "schema" in case:
        if case["schema"] is None:
            spec["versions"][0].pop("schema", None)
        else:
            spec["versions"][0]["schema"] = {"openAPIV3Schema": copy.deepcopy(case["schema"])}
    if "spec_schema" in case:
        spec["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = copy.deepcopy(case["spec_schema"])
    names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
    if isinstance(names.get("plural"), str) and isinstance(spec.get("group"), str):
        crd["metadata"]["name"] = f"{names['plural']}.{spec['group']}"
    if "metadata" in case:
        crd["metadata"] = merge_patch(crd["metadata"], case["metadata"])
    return crd


def load_cases() -> list[Case]:
    """Every case of every corpus file, in file and then document order; ids are unique."""
    cases: list[Case] = []
    for path in sorted(CORPUS.glob("*.yaml")):
        for raw in yaml.safe_load(path.read_text(encoding="utf-8")) or []:
            cases.append(Case(str(raw["id"]), str(raw.get("why", "")), path.name, build(raw)))
    ids = [case.id for case in cases]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"corpus ids used twice: {duplicates}")
    return cases


def load_answers() -> dict[str, Obj]:
    answers: dict[str, Obj] = json.loads(ANSWERS.read_text(encoding="utf-8"))
    return answers


# ---------------------------------------------------------------------------------------------------------------
# Asking a real API server.


class RealServer:
    """Server-side dry-run creates of CRDs on a running kube-apiserver (``KubeServer``), as an admin."""

    def __init__(self, url: str, token: str, ca_pem: bytes) -> None:
        self.url, self._token = url, token
        self._context = ssl.create_default_context(cadata=ca_pem.decode())

    def create(self, crd: Obj, *, dry_run: bool = True, field_validation: str = "Strict") -> Obj:
        """The answer to creating ``crd``: ``{"status": 201}`` or the refusal (see the module's docstring)."""
        query = f"?fieldValidation={field_validation}" + ("&dryRun=All" if dry_run else "")
        code, body = self.request("POST", CRDS_PATH + query, crd)
        return answer_of(code, body)

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Obj]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Authorization": f"Bearer {self._token}", "Content-Type": "application/json",
            "Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, context=self._context, timeout=30) as reply:
                return reply.status, json.loads(reply.read() or b"{}")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")


def answer_of(code: int, body: Obj) -> Obj:
    """A server's reply as the corpus records it."""
    if code in (200, 201):
        return {"status": 201}
    if code == 422:
        causes = (body.get("details") or {}).get("causes") or []
        return {"status": 422, "causes": sorted([c.get("field", ""), c.get("message", "")] for c in causes)}
    return {"status": code, "message": str(body.get("message", ""))}


def ours(crd: Obj) -> Obj:
    """Our checks' answer to the same CRD, in the corpus's form."""
    from offline.cluster.crd_check import crd_refusal

    refused = crd_refusal(copy.deepcopy(crd))
    if refused is None:
        return {"status": 201}
    if refused.code != 422:
        return {"status": refused.code, "message": refused.message}
    return {"status": 422, "causes": sorted([c.field, c.message] for c in refused.causes or ())}


def record() -> None:
    """Ask a fresh real server about every case and rewrite corpus/answers.json."""
    from offline.realkube import KubeServer

    with KubeServer("crd-corpus", controllers=False) as server:
        real = RealServer(server.url, server.token(), server.ca_pem)
        answers = {case.id: real.create(case.crd) for case in load_cases()}
    ANSWERS.write_text(json.dumps(answers, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(answers)} answers written to {ANSWERS}")


if __name__ == "__main__":
    if sys.argv[1:] != ["record"]:
        sys.exit("usage: python -m tests.crds.corpus_kit record")
    record()
