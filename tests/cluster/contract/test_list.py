"""List: by namespace or across all, filtered by label and field selectors, in a stable order."""

from __future__ import annotations

import pytest
from contract_kit import GADGET, WIDGET, gadget, rv, secret, widget

from engine.cluster.api import BadRequest, Cluster


def names(cluster: Cluster, namespace: str | None = None, **selectors: str | dict[str, str] | None) -> list[str]:
    listed = cluster.list(WIDGET, "Widget", namespace, **selectors)  # type: ignore[arg-type]
    return [f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in listed.items]


@pytest.fixture
def populated(cluster: Cluster) -> Cluster:
    """Widgets in two namespaces with assorted labels, plus a Secret that must never show up."""
    cluster.create(widget("a", "one", labels={"app": "web", "tier": "front"}))
    cluster.create(widget("b", "one", labels={"app": "db"}))
    cluster.create(widget("c", "two", labels={"app": "web"}))
    cluster.create(widget("d", "two"))
    cluster.create(secret("a", "one", labels={"app": "web"}))
    return cluster


class TestList:
    def test_one_namespace(self, populated: Cluster) -> None:
        """A namespace lists only its own objects of that kind."""
        assert names(populated, "one") == ["one/a", "one/b"]

    def test_all_namespaces(self, populated: Cluster) -> None:
        """Namespace None lists every namespace, ordered by namespace then name."""
        assert names(populated) == ["one/a", "one/b", "two/c", "two/d"]

    def test_items_carry_type(self, populated: Cluster) -> None:
        """Listed items carry apiVersion and kind, as each object does."""
        item = populated.list(WIDGET, "Widget", "one").items[0]
        assert (item["apiVersion"], item["kind"]) == (WIDGET, "Widget")

    def test_resource_version_covers_items(self, populated: Cluster) -> None:
        """The list's resourceVersion is at least that of every item (it is where a watch resumes)."""
        listed = populated.list(WIDGET, "Widget")
        assert int(listed.resource_version) >= max(rv(o) for o in listed.items)

    def test_empty(self, cluster: Cluster) -> None:
        """A kind with no objects lists nothing."""
        assert cluster.list(GADGET, "Gadget").items == []

    def test_cluster_scoped(self, cluster: Cluster) -> None:
        """Cluster-scoped objects list by name."""
        cluster.create(gadget("z"))
        cluster.create(gadget("y"))
        assert [o["metadata"]["name"] for o in cluster.list(GADGET, "Gadget").items] == ["y", "z"]


class TestLabelSelectors:
    @pytest.mark.parametrize(
        ("selector", "expected"),
        [
            ("app=web", ["one/a", "two/c"]),
            ("app==web", ["one/a", "two/c"]),
            ("app!=web", ["one/b", "two/d"]),
            ("app in (web,db)", ["one/a", "one/b", "two/c"]),
            ("app notin (web)", ["one/b", "two/d"]),
            ("tier", ["one/a"]),
            ("!app", ["two/d"]),
            ("app=web,tier=front", ["one/a"]),
            ("app=web,!tier", ["two/c"]),
        ],
    )
    def test_string_selectors(self, populated: Cluster, selector: str, expected: list[str]) -> None:
        """Each operator selects as on a real cluster."""
        assert names(populated, labels=selector) == expected

    def test_mapping_selector(self, populated: Cluster) -> None:
        """A mapping selects by equality on each key."""
        assert names(populated, labels={"app": "web", "tier": "front"}) == ["one/a"]

    def test_with_namespace(self, populated: Cluster) -> None:
        """Selectors and namespace combine."""
        assert names(populated, "two", labels="app") == ["two/c"]

    def test_bad_selector(self, populated: Cluster) -> None:
        """A malformed selector is a BadRequest (400), not an empty list, worded by the API server."""
        with pytest.raises(BadRequest) as caught:
            populated.list(WIDGET, "Widget", labels="app in web")
        assert caught.value.code == 400
        assert caught.value.message == "unable to parse requirement: found 'web' expected: '('"


class TestFieldSelectors:
    def test_name(self, populated: Cluster) -> None:
        """metadata.name selects by name, across namespaces too."""
        assert names(populated, fields="metadata.name=a") == ["one/a"]
        assert names(populated, fields="metadata.name!=a") == ["one/b", "two/c", "two/d"]

    def test_namespace(self, populated: Cluster) -> None:
        """metadata.namespace selects by namespace."""
        assert names(populated, fields="metadata.namespace=two") == ["two/c", "two/d"]

    def test_with_labels(self, populated: Cluster) -> None:
        """Field and label selectors combine."""
        assert names(populated, labels="app=web", fields="metadata.namespace=two") == ["two/c"]

    def test_unsupported_field(self, populated: Cluster) -> None:
        """Selecting on a field the API does not index is a BadRequest."""
        with pytest.raises(BadRequest, match=r"^field label not supported: spec\.size$"):
            populated.list(WIDGET, "Widget", fields="spec.size=1")

    @pytest.mark.parametrize(("selector", "message"), [
        ("metadata.name", "invalid selector: 'metadata.name'; can't understand 'metadata.name'"),
        ("metadata.namespace=two,spec", "invalid selector: 'metadata.namespace=two,spec'; can't understand 'spec'"),
        ("metadata.name===a", "invalid field selector: unescaped character in value: 61"),
        ("metadata.name=a\\b", "invalid field selector: invalid escape sequence: \\b"),
        ("spec.size=1,metadata.name", "invalid selector: 'spec.size=1,metadata.name'; can't understand"
                                      " 'metadata.name'"),
    ])
    def test_malformed_field_selector(self, populated: Cluster, selector: str, message: str) -> None:
        """A term without an operator, or a value with a bare "=" or an unknown escape, is a BadRequest in the
        API server's words, before any unsupported field is."""
        with pytest.raises(BadRequest) as caught:
            populated.list(WIDGET, "Widget", fields=selector)
        assert caught.value.message == message

    def test_escaped_field_value(self, populated: Cluster) -> None:
        """A value may escape "," and "=" with a backslash; such a name matches nothing here, and is no error."""
        assert names(populated, fields="metadata.name=a\\,b") == []
