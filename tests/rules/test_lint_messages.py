"""`engine lint` finds every mistake in one run, says each plainly at its token, and suggests names."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from engine.rules.lint import lint_paths
from tests.conftest import WIDGET


def lines(rules: Path) -> list[str]:
    return [str(e) for e in lint_paths([rules])]


def only(found: list[str], text: str) -> str:
    hits = [line for line in found if text in line]
    assert len(hits) == 1, found
    return hits[0]


def test_duplicate_step_name(rules_dir: Callable[..., Path]) -> None:
    """A second step of the same name is named as such, at the second step, citing the first."""
    rule = WIDGET.replace("teardown:\n", "  - name: build\n    condition: BuiltReady\n    metric: WidgetBuild2\n"
                          "    do: [{log: again}]\n    done: {reason: Built, message: again}\nteardown:\n")
    found = lines(rules_dir(rule))
    line = only(found, "step name 'build' is used twice")
    assert "widget.yaml:30:5:" in line and "first at" in line and "widget.yaml:19:5" in line


def test_requeue_neither_duration_nor_expression(rules_dir: Callable[..., Path]) -> None:
    """`requeue: 10 seconds` is called what it is, not a JMESPath syntax error."""
    found = lines(rules_dir(WIDGET.replace("requeue: 10s", "requeue: 10 seconds")))
    line = only(found, "requeue: '10 seconds' is neither a Go duration")
    assert "widget.yaml:28:18:" in line


def test_value_that_hides_a_template_function(rules_dir: Callable[..., Path]) -> None:
    """A value named like a function (password) is refused: it would hide password() in templates."""
    found = lines(rules_dir(WIDGET.replace('  size: "order.spec.size || `1`"\n',
                                           '  size: "order.spec.size || `1`"\n  password: "`1`"\n')))
    only(found, "value 'password' hides the function password() in every template")


def test_input_that_hides_a_template_function(rules_dir: Callable[..., Path]) -> None:
    """An input named like a function is refused the same way."""
    rule = WIDGET.replace("values:\n", "inputs:\n  sha256: {get: {apiVersion: v1, kind: ConfigMap, name: x}}\n"
                          "values:\n")
    only(lines(rules_dir(rule)), "input 'sha256' hides the function sha256()")


def test_set_name_that_hides_a_value(rules_dir: Callable[..., Path]) -> None:
    """A `set` of a value's name is refused: the value and the binding would disagree within a pass."""
    rule = WIDGET.replace("      - wait:", "      - set: {size: \"`2`\"}\n      - wait:")
    only(lines(rules_dir(rule)), "the name set in step build 'size' hides the value 'size'")


def test_indentation_mistake_names_the_line(rules_dir: Callable[..., Path]) -> None:
    """A key indented deeper than its siblings is named by its line, not by the parser's state."""
    rule = WIDGET.replace("  plural: widgets\n", "   plural: widgets\n")
    found = lines(rules_dir(rule))
    line = only(found, "line 4 is indented")
    assert "widget.yaml:4:" in line and "block" not in line and "mapping values" not in line


def test_dedented_key_names_the_line(rules_dir: Callable[..., Path]) -> None:
    """A key indented less than its siblings is named by its line too."""
    rule = WIDGET.replace("    condition: BuiltReady\n", "   condition: BuiltReady\n")
    found = lines(rules_dir(rule))
    assert any("is indented" in line and "line 20" in line for line in found), found


def test_tab_in_indentation_names_the_line(rules_dir: Callable[..., Path]) -> None:
    """A tab in the indentation says so, with its line."""
    found = lines(rules_dir(WIDGET.replace("  plural: widgets\n", "\tplural: widgets\n")))
    only(found, "line 4 is indented with a tab")


def test_did_you_mean_for_names_functions_fields_reasons(rules_dir: Callable[..., Path]) -> None:
    """Misspelt names, functions, fields, reasons and conditions get the closest known spelling."""
    rule = (WIDGET.replace('"built {{ size }} parts"', '"built {{ sise }} parts"')
            .replace("order.spec.size || `1`", "sha265(order.spec.size) || `1`")
            .replace("  finalizer: example.io/teardown\n", "  finalizer: example.io/teardown\n  finaliser: x\n")
            .replace("reason: Waiting", "reason: Wating")
            .replace("condition: BuiltReady", "condition: BuildReady"))
    found = lines(rules_dir(rule))
    only(found, "reason 'Wating' is not declared in conditions.reasons; did you mean 'Waiting'?")
    only(found, "condition 'BuildReady' is not declared in conditions.types; did you mean 'BuiltReady'?")
    only(found, "unknown name 'sise'; did you mean 'size'?")
    only(found, "unknown function sha265(); did you mean sha256()?")
    only(found, "unknown field 'finaliser'; did you mean 'finalizer'?")


def test_expression_error_points_at_the_token(rules_dir: Callable[..., Path]) -> None:
    """An unknown function is reported at its own column, not at the start of the value."""
    found = lines(rules_dir(WIDGET.replace("order.spec.size || `1`", "order.spec.size || sizee(`1`)")))
    line = only(found, "unknown function sizee()")
    assert "widget.yaml:17:29:" in line, line


def test_unknown_name_points_at_the_name(rules_dir: Callable[..., Path]) -> None:
    """An unknown name in a message template is reported at the name, not at the step."""
    found = lines(rules_dir(WIDGET.replace('"built {{ size }} parts"', '"built {{ sise }} parts"')))
    line = only(found, "unknown name 'sise'")
    assert "widget.yaml:29:46:" in line, line


def test_five_mistakes_in_one_file_reported_in_one_run(rules_dir: Callable[..., Path]) -> None:
    """A schema error, a bad requeue, an unknown function, an undeclared reason and a duplicate step: one run."""
    rule = (WIDGET.replace("    metric: WidgetBuild\n", "    metric: WidgetBuild\n    colour: red\n")
            .replace("requeue: 10s", "requeue: 10 seconds")
            .replace("order.spec.size || `1`", "order.spec.size || sizee(`1`)")
            .replace('done: {reason: Built, message: "built {{ size }} parts"}',
                     'done: {reason: Bulit, message: "built {{ size }} parts"}')
            .replace("teardown:\n", "  - name: build\n    condition: BuiltReady\n    metric: WidgetBuild2\n"
                     "    do: [{log: again}]\n    done: {reason: Built, message: again}\nteardown:\n"))
    found = lines(rules_dir(rule))
    for text in ("unknown field 'colour'", "'10 seconds' is neither a Go duration", "unknown function sizee()",
                 "reason 'Bulit' is not declared", "step name 'build' is used twice"):
        assert any(text in line for line in found), (text, found)


def test_template_injection_reported_even_when_the_rule_file_has_errors(rules_dir: Callable[..., Path]) -> None:
    """A template value not piped through tojson is reported in the same run as a rule-file error."""
    from tests.conftest import PART

    found = lines(rules_dir(WIDGET.replace("reason: Waiting", "reason: Wating"),
                            template=PART.replace("{{ size | string | tojson }}", "{{ size }}")))
    only(found, "reason 'Wating' is not declared")
    only(found, "an interpolated value is not piped through `| tojson`")


def test_every_file_reported_in_one_run(rules_dir: Callable[..., Path]) -> None:
    """Two broken rule files in one folder: both files' errors come out of one run."""
    rules = rules_dir(WIDGET.replace("reason: Waiting", "reason: Wating"),
                      extra={"rules/gadget.yaml": WIDGET.replace("kind: Widget", "kind: Gadget")
                             .replace("templates", "templates").replace("size: ", "size2: ")})
    found = lines(rules)
    assert any("widget.yaml" in line and "Wating" in line for line in found), found
    assert any("gadget.yaml" in line for line in found), found


def test_labelled_is_for_a_get_from_a_cache(rules_dir: Callable[..., Path]) -> None:
    """`labelled` says a got object carries the ownership labels; on a list or a live read it means nothing."""
    rule = WIDGET.replace("values:\n", "inputs:\n  cms: {list: {apiVersion: v1, kind: ConfigMap}, labelled: true}\n"
                          "  cm: {get: {apiVersion: v1, kind: ConfigMap, name: x}, live: true, labelled: true}\n"
                          "  ok: {get: {apiVersion: v1, kind: ConfigMap, name: x}, labelled: true}\nvalues:\n")
    found = [line for line in lines(rules_dir(rule)) if "labelled is for a get that is not live" in line]
    assert len(found) == 2, found


def test_adopt_owned_is_no_status_apply(rules_dir: Callable[..., Path]) -> None:
    """`adopt: owned` creates an object the cache does not hold, which a status apply cannot: refused, at the action."""
    rule = WIDGET.replace("      - apply: part.yaml.j2\n", "      - apply: part.yaml.j2\n        adopt: owned\n"
                          "        status: true\n")
    line = only(lines(rules_dir(rule)), "adopt: owned creates an object the cache does not hold")
    assert "widget.yaml:" in line
