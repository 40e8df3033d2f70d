"""Generated CRDs (``crd_strategies``) created on a real API server and checked by ours: the same verdict, and
for a refusal the same causes (field path and message), or the same 400 message.

What ``test_crd_corpus`` lists as kept differences is set aside here too: the refusals for CEL cost are dropped
from the real answer (cost is not estimated), a syntax error's words after "Syntax error" and the Go struct
dumps in a value are not compared. ``C5C3_CRD_EXAMPLES`` sets how many CRDs are tried (default 400; the run is
derandomised so CI tries the same ones, set ``C5C3_CRD_SEED`` to explore others).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings

from offline.realkube import KubeServer
from tests.crds.corpus_kit import RealServer, ours
from tests.crds.crd_strategies import crds

Obj = dict[str, Any]

EXAMPLES = int(os.environ.get("C5C3_CRD_EXAMPLES", "400"))
SEED = os.environ.get("C5C3_CRD_SEED")

_COST = ("estimated rule cost", "cost total", "estimated messageExpression cost")
_STRUCT = re.compile(r'^Invalid value: (?:\[\{"Name".*?\}\]|\{"ID".*?\}|\{\.\.\.\}): (?=[a-z])', re.DOTALL)
_RULE_SYNTAX = re.compile(r"(compilation failed: ERROR: <input>):\d+:\d+(: Syntax error).*", re.DOTALL)


def comparable(answer: Obj) -> Obj:
    """An answer with the kept differences taken out (see the module's docstring)."""
    if answer["status"] != 422:
        return answer
    causes = []
    for field, message in answer["causes"]:
        if any(words in message for words in _COST):
            continue
        message = _RULE_SYNTAX.sub(r"\1\2", message)
        message = _STRUCT.sub("Invalid value: <Go struct>: ", message)
        causes.append([field, message])
    if not causes:
        return {"status": 201}
    return {"status": 422, "causes": sorted(causes)}


@pytest.fixture(scope="module")
def real_server(real_cluster: Callable[[str], KubeServer]) -> RealServer:
    server = real_cluster("crds")
    return RealServer(server.url, server.token(), server.ca_pem)


def _explored(test: Any) -> Any:
    configured = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=SEED is None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                 HealthCheck.function_scoped_fixture])(test)
    return seed(int(SEED))(configured) if SEED is not None else configured


@_explored
@given(crd=crds())
def test_generated_crds_get_the_real_servers_answer(real_server: RealServer, crd: Obj) -> None:
    """Whatever the CRD, our checks answer as the real server does (kept differences aside)."""
    assert comparable(ours(crd)) == comparable(real_server.create(crd))
