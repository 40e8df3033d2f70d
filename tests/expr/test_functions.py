"""The function library: the registry's shape and every function, called as rule authors call them."""

import base64
import re
import threading
import unicodedata
from typing import Any

import pytest

from engine.expr import FUNCTIONS, JMESPATH_BUILTINS, ExprError, SecretSink, compile_query, compile_text, use_sink
from engine.expr.functions import current_sink


def q(expr: str, **context: Any) -> Any:
    """Evaluate a JMESPath expression on keyword arguments."""
    return compile_query(expr).evaluate(context)


def j(source: str, **context: Any) -> str:
    """Render a Jinja rule string on keyword arguments."""
    return compile_text(source).render(context)


def arity_errors() -> list[tuple[str, int]]:
    """(function, argument count) pairs that are wrong: one too few for each, one too many for a fixed arity."""
    cases = [(name, fn.arity[0] - 1) for name, fn in sorted(FUNCTIONS.items()) if fn.arity[0] > 0]
    cases += [(name, fn.arity[1] + 1) for name, fn in sorted(FUNCTIONS.items()) if fn.arity[1] is not None]
    return cases


ARITY_ERRORS = arity_errors()


class TestRegistry:
    def test_every_entry_is_documented_and_consistent(self) -> None:
        """Each function has its own name, a doc, and one type entry per required argument."""
        for name, fn in FUNCTIONS.items():
            assert fn.name == name
            assert fn.doc, name
            assert len(fn.jmes_types) == fn.arity[0], name
            assert fn.arity[1] is None or fn.arity[1] == fn.arity[0], name

    def test_no_function_shadows_a_jmespath_builtin(self) -> None:
        """Registered names never replace JMESPath's own functions, except keys/values (same result)."""
        assert set(FUNCTIONS) & JMESPATH_BUILTINS == {"keys", "values"}
        assert {"length", "merge", "join", "sort_by"} <= JMESPATH_BUILTINS

    def test_only_password_and_the_questions_about_the_pass_are_impure(self) -> None:
        """Every function is pure except password(), the questions about the clusters now, and is_child() (the
        pass's ownership test)."""
        assert {name for name, fn in FUNCTIONS.items() if not fn.pure} == {
            "password", "cluster_registered", "cluster_reachable", "is_child"}

    def test_signature_text(self) -> None:
        """The readable signature names argument types, variadic tails and the result."""
        assert FUNCTIONS["time_add"].signature == "time_add(string, string|number) -> string"
        assert FUNCTIONS["time_max"].signature == "time_max(string|null...) -> string|null"
        assert FUNCTIONS["password"].signature == "password() -> string"

    def test_expected_names_are_registered(self) -> None:
        """The names rule files rely on all exist."""
        expected = {
            "sha256", "hash8", "hash_fraction", "b64enc", "b64dec", "query_escape", "path_escape",
            "userinfo_escape", "go_quote", "go_quote_list", "to_yaml", "to_json", "password", "fold",
            "dns_label_ok", "add", "sub", "mul", "to_int", "int_or", "parse_suffix_int", "duration_seconds",
            "format_duration", "time_add", "time_diff", "time_before", "time_max", "time_min", "keys_sorted",
            "first", "index_by", "classify", "condition", "condition_true", "truncate_bytes", "range_int",
        }  # fmt: skip
        assert expected <= set(FUNCTIONS)

    @pytest.mark.parametrize(("name", "count"), ARITY_ERRORS)
    def test_jinja_and_jmespath_agree_on_arity_errors(self, name: str, count: int) -> None:
        """A call with one argument too few or too many is a compile error in JMESPath and a render error in Jinja."""
        args = ", ".join(["`1`"] * count)
        with pytest.raises(ValueError, match="argument"):
            compile_query(f"{name}({args})")
        jargs = ", ".join(["1"] * count)
        with pytest.raises(ExprError, match="argument"):
            j(f"{{{{ {name}({jargs}) }}}}")

    def test_every_function_has_an_arity_error_case(self) -> None:
        """Each function can be called wrongly (fixed ones with too many, variadic ones with too few arguments)."""
        assert {name for name, _ in ARITY_ERRORS} == set(FUNCTIONS)

    @pytest.mark.parametrize("name", sorted(n for n, fn in FUNCTIONS.items() if fn.arity[1] is None))
    def test_variadic_functions_take_any_number_past_their_minimum(self, name: str) -> None:
        """A variadic function takes three more arguments than its minimum, in JMESPath and in Jinja alike."""
        count = FUNCTIONS[name].arity[0] + 3
        stamps = {f"t{i}": f"2026-01-0{i + 1}T00:00:00Z" for i in range(count)}
        queried = q(f"{name}({', '.join(stamps)})", **stamps)
        rendered = j(f"{{{{ {name}({', '.join(stamps)}) }}}}", **stamps)
        assert queried == rendered
        assert queried in stamps.values()


class TestHashing:
    @pytest.mark.parametrize(
        ("text", "h8"),
        [
            ("/tenant-a/workflow", "cebe0e7a"),
            ("edge-1/tenant-a/workflow", "a50c7809"),
            ("/tenant-b/workflow", "865180b2"),
        ],
    )
    def test_hash8_worked_examples(self, text: str, h8: str) -> None:
        """hash8 gives the child-name hashes of the spec's worked examples."""
        assert q("hash8(s)", s=text) == h8
        assert j("{{ s | hash8 }}", s=text) == h8

    def test_sha256(self) -> None:
        """sha256 is lowercase hex of the UTF-8 bytes."""
        assert q("sha256('abc')") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        assert q("sha256('')") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        assert len(q("sha256('é')")) == 64

    def test_hash_fraction(self) -> None:
        """hash_fraction is the first 4 digest bytes as a uint32 over 2**32."""
        assert q("hash_fraction(s)", s="/tenant-a/workflow") == 0xCEBE0E7A / 2**32
        assert 0 <= q("hash_fraction('x')") < 1

    def test_base64(self) -> None:
        """b64enc and b64dec are standard padded base64 over UTF-8, and inverse."""
        assert q("b64enc('hello')") == "aGVsbG8="
        assert q("b64dec('aGVsbG8=')") == "hello"
        assert q("b64dec(b64enc('héllo ☺'))") == "héllo ☺"

    @pytest.mark.parametrize("bad", ["not base64!", "aGVsbG8", "/w=="])
    def test_b64dec_rejects_bad_input(self, bad: str) -> None:
        """Invalid base64 or non-UTF-8 bytes are an evaluation error."""
        with pytest.raises(ExprError, match="b64dec"):
            q("b64dec(s)", s=bad)

    def test_escapes(self) -> None:
        """The three URL escapes are reachable by name."""
        assert q("query_escape('a b/c')") == "a+b%2Fc"
        assert q("path_escape('a b/c')") == "a%20b%2Fc"
        assert q("userinfo_escape('p@ss')") == "p%40ss"

    def test_go_quote(self) -> None:
        """go_quote and go_quote_list produce Go's %q."""
        assert q("go_quote(s)", s='a"b\u00a0') == '"a\\"b\\u00a0"'
        assert j("{{ go_quote(s) }}", s="é\n") == '"é\\n"'
        assert q("go_quote_list(l)", l=["a", "b"]) == '["a" "b"]'

    def test_go_quote_list_rejects_non_strings(self) -> None:
        """go_quote_list takes only an array of strings."""
        with pytest.raises(ExprError, match="go_quote_list"):
            q("go_quote_list(l)", l=["a", 1])

    def test_to_yaml_keeps_order_and_unicode(self) -> None:
        """to_yaml writes block style in the given key order with UTF-8 literal."""
        assert q("to_yaml(v)", v={"b": 1, "a": [1, "é"]}) == "b: 1\na:\n- 1\n- é\n"

    def test_to_json_is_compact(self) -> None:
        """to_json writes compact JSON in the given key order with UTF-8 literal."""
        assert q("to_json(v)", v={"b": 1, "a": ["é", None, True]}) == '{"b":1,"a":["é",null,true]}'


class TestPassword:
    def test_shape(self) -> None:
        """A password is 43 URL-safe base64 characters encoding 32 bytes."""
        value = q("password()")
        assert re.fullmatch(r"[A-Za-z0-9_-]{43}", value)
        assert len(base64.urlsafe_b64decode(value + "=")) == 32

    def test_each_call_differs(self) -> None:
        """Two calls never return the same password."""
        assert q("password()") != q("password()")

    def test_sink_collects_from_both_languages(self) -> None:
        """Every password returned while a sink is in use is recorded in it, in order."""
        with use_sink(SecretSink()) as sink:
            a = q("password()")
            b = j("{{ password() }}")
        assert sink.values() == (a, b)
        assert current_sink.get() is None
        assert sink.redact(f"x {a} y") == "x [redacted] y"

    def test_sink_is_per_thread(self) -> None:
        """A sink set in one thread does not collect another thread's passwords."""
        seen: list[str] = []
        with use_sink(SecretSink()) as sink:
            worker = threading.Thread(target=lambda: seen.append(q("password()")))
            worker.start()
            worker.join()
        assert seen and sink.values() == ()


class TestNames:
    @pytest.mark.parametrize(
        ("a", "b"), [("ADMIN", "admin"), ("Glänce", "glance"), ("Nova", "nova"), ("Straße", "STRASSE"), ("Ñ", "n")]
    )
    def test_fold_equates(self, a: str, b: str) -> None:
        """fold ignores case and accents."""
        assert q("fold(a) == fold(b)", a=a, b=b) is True

    def test_fold_of_ascii_is_the_full_fold(self) -> None:
        """ASCII text skips the normalization steps and folds to what they give (every ASCII character)."""
        text = "".join(chr(code) for code in range(128))
        full = unicodedata.normalize("NFC", "".join(
            ch for ch in unicodedata.normalize("NFD", text) if unicodedata.category(ch) != "Mn")).casefold()
        assert q("fold(a)", a=text) == full

    def test_fold_keeps_distinct_names_distinct(self) -> None:
        """fold does not merge names that differ in letters."""
        assert q("fold('nova') == fold('neutron')") is False

    @pytest.mark.parametrize(
        ("label", "ok"),
        [("a", True), ("a-b-1", True), ("x" * 63, True), ("x" * 64, False), ("", False), ("-a", False),
         ("a-", False), ("A", False), ("a.b", False), ("a_b", False)],
    )  # fmt: skip
    def test_dns_label_ok(self, label: str, ok: bool) -> None:
        """dns_label_ok accepts exactly RFC 1123 labels."""
        assert q("dns_label_ok(s)", s=label) is ok


class TestNumbers:
    def test_arithmetic(self) -> None:
        """add, sub and mul keep whole results as integers."""
        assert q("add(`1`, `2`)") == 3
        assert q("sub(`1`, `2.5`)") == -1.5
        assert q("mul(`2`, `1.5`)") == 3 and isinstance(q("mul(`2`, `1.5`)"), int)

    def test_arithmetic_rejects_strings_and_booleans(self) -> None:
        """Arithmetic takes numbers only, in both languages."""
        with pytest.raises(ExprError, match="add"):
            q("add('1', `2`)")
        with pytest.raises(ExprError, match=r"add\(\) argument 1 must be number, got boolean"):
            j("{{ add(true, 2) }}")

    @pytest.mark.parametrize(
        ("value", "result"),
        [("12", 12), ("-3", -3), ("+4", 4), (7, 7), (2.7, 2), ("1.5", None), (" 1", None), ("abc", None),
         (True, None), (None, None), ([1], None)],
    )  # fmt: skip
    def test_to_int(self, value: Any, result: Any) -> None:
        """to_int parses decimal strings and numbers, and gives null for anything else."""
        assert q("to_int(v)", v=value) == result

    def test_int_or(self) -> None:
        """int_or falls back to the default when to_int gives null."""
        assert q("int_or(v, `5`)", v="7") == 7
        assert q("int_or(v, `5`)", v="x") == 5
        assert q("int_or(missing, `5`)") == 5

    @pytest.mark.parametrize(
        ("name", "result"),
        [("x-password-v12", 12), ("a-password-v1-password-v3", 3), ("x-password-v+5", 5), ("x-password-v0", None),
         ("x-password-v-1", None), ("x-password-v", None), ("x-password-vabc", None), ("plain", None),
         ("x-password-v9223372036854775807", 9223372036854775807), ("x-password-v9223372036854775808", None)],
    )  # fmt: skip
    def test_parse_suffix_int(self, name: str, result: Any) -> None:
        """The text after the last marker is a base-10 int64 of at least 1, else null."""
        assert q("parse_suffix_int(s, '-password-v')", s=name) == result

    def test_range_int(self) -> None:
        """range_int counts from start up to stop, and is bounded."""
        assert q("range_int(`0`, `3`)") == [0, 1, 2]
        assert q("range_int(`5`, `2`)") == []
        assert len(q("range_int(`1`, `10001`)")) == 10000
        with pytest.raises(ExprError, match="10000"):
            q("range_int(`0`, `10001`)")
        with pytest.raises(ExprError, match="whole"):
            q("range_int(`0`, `1.5`)")


class TestTime:
    def test_duration_seconds(self) -> None:
        """Go durations convert to seconds, whole ones as integers."""
        assert q("duration_seconds('720h')") == 2592000
        assert q("duration_seconds('1m30s')") == 90
        assert q("duration_seconds('10ms')") == 0.01
        assert q("duration_seconds('-1.5h')") == -5400
        assert q("duration_seconds('0')") == 0

    def test_invalid_duration_is_a_clear_error(self) -> None:
        """An invalid duration names the function and the problem."""
        with pytest.raises(ExprError, match=r"duration_seconds\(\): invalid duration: unknown unit"):
            q("duration_seconds('1d')")
        with pytest.raises(ExprError, match="missing unit"):
            q("duration_seconds('30')")

    @pytest.mark.parametrize(
        ("seconds", "text"),
        [(3600, "1h0m0s"), (90, "1m30s"), (0, "0s"), (0.01, "10ms"), (1.5, "1.5s"), (-3600, "-1h0m0s"),
         (2592000, "720h0m0s"), (1.1, "1.1s")],
    )  # fmt: skip
    def test_format_duration(self, seconds: float, text: str) -> None:
        """Seconds format as Go's Duration.String."""
        assert q("format_duration(s)", s=seconds) == text

    @pytest.mark.parametrize(
        ("start", "delta", "result"),
        [
            ("2026-01-01T00:00:00Z", "720h", "2026-01-31T00:00:00Z"),
            ("2026-01-01T00:00:00Z", 90, "2026-01-01T00:01:30Z"),
            ("2026-01-01T00:00:00Z", "1.5s", "2026-01-01T00:00:01Z"),
            ("2026-01-01T00:00:00Z", "-1s", "2025-12-31T23:59:59Z"),
            ("2026-01-01T00:00:00Z", "-0.5s", "2025-12-31T23:59:59Z"),
            ("2026-01-01T00:00:00Z", -0.5, "2025-12-31T23:59:59Z"),
            ("2026-01-01T01:00:00+01:00", "0s", "2026-01-01T00:00:00Z"),
            ("2026-01-01T00:00:00.900Z", "0s", "2026-01-01T00:00:00Z"),
            ("2024-02-28T12:00:00Z", "24h", "2024-02-29T12:00:00Z"),
        ],
    )
    def test_time_add(self, start: str, delta: Any, result: str) -> None:
        """time_add adds a duration or seconds and writes UTC whole seconds, truncating toward the past."""
        assert q("time_add(t, d)", t=start, d=delta) == result

    def test_time_diff_and_before(self) -> None:
        """time_diff is a - b in seconds; time_before compares instants, not text."""
        assert q("time_diff('2026-01-01T00:01:00Z', '2026-01-01T00:00:00Z')") == 60
        assert q("time_diff('2026-01-01T00:00:00Z', '2026-01-01T00:00:00.5Z')") == -0.5
        assert q("time_before('2026-01-01T00:00:00Z', '2026-01-01T00:00:01Z')") is True
        assert q("time_before('2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')") is False
        assert q("time_before('2026-01-01T00:30:00+01:00', '2026-01-01T00:00:00Z')") is True

    def test_time_max_and_min_ignore_nulls(self) -> None:
        """time_max and time_min pick among non-null timestamps and give null when there are none."""
        a, b = "2026-01-01T00:00:00Z", "2026-06-01T00:00:00Z"
        assert q("time_max(a, missing, b)", a=a, b=b) == b
        assert q("time_min(a, missing, b)", a=a, b=b) == a
        assert q("time_max(missing)") is None
        assert j("{{ time_max(a, none, b) }}", a=a, b=b) == b

    @pytest.mark.parametrize("bad", ["2026-01-01", "2026-01-01 00:00:00", "2026-13-01T00:00:00Z", "yesterday"])
    def test_invalid_timestamp(self, bad: str) -> None:
        """A string that is not an RFC 3339 timestamp is an evaluation error."""
        with pytest.raises(ExprError, match="time_add"):
            q("time_add(t, '1s')", t=bad)

    @pytest.mark.parametrize("bad", ["2026-02-30T00:00:00Z", "yesterday"])
    def test_a_bad_timestamp_read_again_names_the_function_reading_it(self, bad: str) -> None:
        """Parsed timestamps are remembered by text (a pass reads the same few again and again), the error of a
        bad one is not: each function that meets it names itself, and the reason stays the same."""
        with pytest.raises(ExprError) as first:
            q("time_before(t, '2026-01-01T00:00:00Z')", t=bad)
        with pytest.raises(ExprError) as second:
            q("time_diff(t, '2026-01-01T00:00:00Z')", t=bad)
        assert "time_before(): " in str(first.value) and "time_diff(): " in str(second.value)
        assert str(first.value).partition("time_before(): ")[2] == str(second.value).partition("time_diff(): ")[2]

    def test_remembered_timestamps_read_as_parsed_afresh(self) -> None:
        """The remembered parse and format answer what a fresh one answers, for every kind of text, read twice."""
        from engine.expr import times

        texts = ["2026-01-01T00:00:00Z", "2026-01-01T00:00:00.5Z", "2026-01-01T00:00:00.50Z",
                 "2026-01-01t00:00:00z", "2026-01-01T01:00:00+01:00", "2026-01-01T00:00:00.1234567-02:30",
                 "2026-02-30T00:00:00Z", "2026-01-01", "9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z"]
        for _ in range(2):
            for text in texts:
                assert times._time_us(text) == times._time_us.__wrapped__(text), text
            for seconds in (0, -1, 1767225600, 253402300799, 253402300800, -62135596801):
                assert times._time_text(seconds) == times._time_text.__wrapped__(seconds), seconds
        assert q("time_add(t, `1`)", t="2026-01-01T00:00:00.5Z") == "2026-01-01T00:00:01Z"
        assert q("time_add(t, `1`)", t="2026-01-01T00:00:00.50Z") == "2026-01-01T00:00:01Z"


OBJ = {
    "status": {
        "conditions": [
            {"type": "Ready", "status": "False", "message": "no"},
            {"type": "Synced", "status": "True"},
            {"type": "Ready", "status": "True"},
        ]
    }
}

RULES = [
    [["No suitable endpoint could be found in the service catalog"], "CatalogEndpointMismatch"],
    [["x509"], "TLSVerificationFailed"],
    [["401", "Unauthorized"], "AuthenticationFailed"],
    [["no such host", "connection refused", "dial tcp", "i/o timeout"], "EndpointUnreachable"],
]


class TestCollections:
    def test_keys_sorted_and_first(self) -> None:
        """keys_sorted sorts keys; first gives the first element or null."""
        assert q("keys_sorted(o)", o={"b": 1, "a": 2}) == ["a", "b"]
        assert q("first(l)", l=[3, 4]) == 3
        assert q("first(l)", l=[]) is None
        assert q("first(missing)") is None

    def test_index_by(self) -> None:
        """index_by keys elements by a string field, skipping elements without one."""
        items = [{"name": "a", "v": 1}, {"v": 2}, {"name": "b", "v": 3}]
        assert q("index_by(items, 'name')", items=items) == {"a": items[0], "b": items[2]}

    def test_condition(self) -> None:
        """condition returns the first condition of the type; condition_true checks its status."""
        assert q("condition(o, 'Ready').message", o=OBJ) == "no"
        assert q("condition_true(o, 'Ready')", o=OBJ) is False
        assert q("condition_true(o, 'Synced')", o=OBJ) is True
        assert q("condition(o, 'Gone')", o=OBJ) is None
        assert q("condition_true(missing, 'Ready')") is False
        assert q("condition(o, 'Ready')", o={"status": {}}) is None

    def test_classify_takes_first_text_then_first_rule(self) -> None:
        """Texts are tried in order and, for each, rules in order; the first match wins."""
        texts = [None, "all fine", "dial tcp: x509 certificate signed by unknown authority"]
        assert q("classify(t, r)", t=texts, r=RULES) == {"label": "TLSVerificationFailed", "text": texts[2]}
        assert q("classify(t, r)", t=["HTTP 401", "x509"], r=RULES)["label"] == "AuthenticationFailed"

    def test_classify_is_case_sensitive_and_may_find_nothing(self) -> None:
        """Substring matching is case-sensitive; no match gives null."""
        assert q("classify(t, r)", t=["unauthorized", "X509"], r=RULES) is None
        assert q("classify(`[]`, r)", r=RULES) is None

    def test_classify_rejects_malformed_rules(self) -> None:
        """A rule that is not [[substring, ...], label] is an evaluation error."""
        with pytest.raises(ExprError, match="classify"):
            q("classify(t, r)", t=["x"], r=[["x", "label"]])

    @pytest.mark.parametrize(
        ("text", "limit", "result"),
        [("hello", 5, "hello"), ("hello", 4, "h..."), ("héllo", 3, "hé"), ("héllo", 2, "h"), ("héllo", 6, "héllo"),
         ("ab☺", 4, "ab"), ("hello", 2, "..")],
    )  # fmt: skip
    def test_truncate_bytes(self, text: str, limit: int, result: str) -> None:
        """Cut to at most N UTF-8 bytes on a character boundary, with the suffix when cut."""
        suffix = "" if "é" in text or "☺" in text else "..."
        assert q("truncate_bytes(s, n, x)", s=text, n=limit, x=suffix) == result

    def test_truncate_bytes_condition_message_limit(self) -> None:
        """A long message cut at 32768 bytes ends with the suffix and fits the limit."""
        suffix = " […truncated]"
        out = q("truncate_bytes(s, `32768`, x)", s="é" * 20000, x=suffix)
        assert out.endswith(suffix)
        assert len(out.encode()) <= 32768
        assert set(out.removesuffix(suffix)) == {"é"}
