"""CRD admission runs on every write to a kind whose CRD is installed."""

from __future__ import annotations

import copy

import pytest
from contract_kit import WIDGET, WIDGET_CRD, widget

from engine.cluster.api import Cluster, Invalid

OPTIONS_CRD = copy.deepcopy(WIDGET_CRD)
_spec = OPTIONS_CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
_spec["properties"]["options"] = {"type": "object", "properties": {"retries": {"type": "integer", "default": 3}}}
del _spec["x-kubernetes-preserve-unknown-fields"]


class TestAdmission:
    def test_create_rejects_schema_violation(self, cluster: Cluster) -> None:
        """A value outside the schema is Invalid (422), naming the field."""
        with pytest.raises(Invalid) as caught:
            cluster.create(widget("a", spec={"size": -1}))
        assert caught.value.code == 422
        assert [c.field for c in caught.value.causes] == ["spec.size"]
        assert caught.value.message.startswith('Widget.example.com "a" is invalid: spec.size')

    @pytest.mark.parametrize("verb", ["update", "patch", "apply"])
    def test_writes_to_existing_objects_are_admitted(self, cluster: Cluster, verb: str) -> None:
        """Update, patch and apply are admitted as create is, and a rejection changes nothing."""
        created = cluster.create(widget("a"))
        bad = widget("a", spec={"size": 1, "mode": "sideways"})
        with pytest.raises(Invalid):
            if verb == "update":
                cluster.update(bad)
            elif verb == "patch":
                cluster.patch(WIDGET, "Widget", "default", "a", {"spec": {"mode": "sideways"}})
            else:
                cluster.apply(bad, field_manager="m", force=True)
        assert cluster.get(WIDGET, "Widget", "default", "a") == created

    def test_status_writes_are_admitted(self, cluster: Cluster) -> None:
        """A status write is checked against the schema too (here: status must be an object)."""
        cluster.create(widget("a"))
        with pytest.raises(Invalid):
            cluster.update_status(widget("a", status="broken"))  # type: ignore[arg-type]

    def test_defaults_and_pruning(self, bare: Cluster) -> None:
        """Defaults fill in and unknown fields are pruned, and the object reads back that way."""
        bare.create(OPTIONS_CRD)
        created = bare.create(widget("a", spec={"size": 1, "options": {}, "unknown": True}))
        assert created["spec"] == {"size": 1, "options": {"retries": 3}}
        assert bare.get(WIDGET, "Widget", "default", "a")["spec"] == created["spec"]

    def test_apply_creates_through_admission(self, bare: Cluster) -> None:
        """An apply that creates the object is defaulted like a create."""
        bare.create(OPTIONS_CRD)
        applied = bare.apply(widget("a", spec={"options": {}}), field_manager="m")
        assert applied["spec"] == {"options": {"retries": 3}}

    def test_kinds_without_crd_are_not_admitted(self, cluster: Cluster) -> None:
        """Core kinds carry any data, but only the fields their type declares: no CRD schema applies to them,
        and a field their Go type lacks is dropped, as the API server decodes them."""
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "d"},
                "data": {"anything": "goes"}, "extra": {"kept": True}}
        created = cluster.create(body)
        assert created["data"] == {"anything": "goes"} and "extra" not in created
