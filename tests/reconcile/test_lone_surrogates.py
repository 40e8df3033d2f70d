"""A lone surrogate ("\\ud800" in an order's JSON) has no UTF-8 form: a value holding one, handed to a child
template or to a function that encodes it, ends the step with a condition that names the template (or the
expression) and the problem, never a traceback and never the value. Both the compiled closures (decision 42)
and the Jinja fallback answer so."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.expr import ExprError, compile_object_template, compile_text
from engine.rules.catalog import load_catalog
from tests.conftest import PART, WIDGET
from tests.reconcile.test_run import World

LONE = "\ud800"
PROBLEM = "a string holds a lone surrogate (half of a UTF-16 pair), which is not Unicode text"

TEMPLATES = {
    "closures": PART,  # every output compiles; the value is not plain ASCII, so the text is read by PyYAML
    "jinja": PART.swap("\ndata:\n", "\ndata:\n{% if size %}\n  shown: \"yes\"\n{% endif %}\n"),  # a block: Jinja only
}


@pytest.fixture
def world(rules_dir: Callable[..., Path]) -> Callable[[str, str], World]:
    def make(rule: str, template: str) -> World:
        return World(next(iter(load_catalog(rules_dir(rule, template)).values())))
    return make


@pytest.mark.parametrize("path", sorted(TEMPLATES))
def test_an_order_value_with_a_lone_surrogate_fails_the_step_with_a_clear_condition(
    world: Callable[[str, str], World], path: str, caplog: pytest.LogCaptureFixture
) -> None:
    w = world(WIDGET, TEMPLATES[path])
    w.order(size=f"big{LONE}")
    with caplog.at_level(logging.INFO):
        result = w.run()
    assert result.error is not None
    (built,) = [c for c in w.live()["status"]["conditions"] if c["type"] == "BuiltReady"]
    assert (built["status"], built["reason"]) == ("False", "Error")
    assert built["message"].startswith("the rules failed: ")
    assert "widget/part.yaml.j2: rendered YAML is invalid at rendered line " in built["message"]
    assert built["message"].endswith(PROBLEM)
    assert LONE not in built["message"] and "big" not in built["message"]
    assert w.cluster.list("v1", "ConfigMap", "ns").items == []
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"


@pytest.mark.parametrize("source", ["{{ hash8(x) }}", "{{ x | b64enc }}",
                                    "{% if x %}{{ hash8(x) }}{% endif %}"])  # closures, then Jinja
def test_a_function_that_encodes_a_lone_surrogate_says_so(source: str) -> None:
    with pytest.raises(ExprError) as info:
        compile_text(source).render({"x": f"secret{LONE}"})
    assert info.value.reason.endswith(f"(): {PROBLEM} (arguments: string)")
    assert "secret" not in str(info.value)


def test_the_rendered_line_is_named() -> None:
    template = compile_object_template("kind: K\nmetadata:\n  name: n\ndata:\n  x: {{ x | tojson }}\n",
                                       "templates/k/t.yaml.j2")
    with pytest.raises(ExprError) as info:
        template.render({"x": {"k": LONE}})
    assert str(info.value) == f"templates/k/t.yaml.j2: rendered YAML is invalid at rendered line 5: {PROBLEM}"
