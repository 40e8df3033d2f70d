"""Server-Side Apply field ownership and managedFields bookkeeping (engine.cluster.ssa)."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from engine.cluster import ssa
from engine.cluster.api import Conflict, Invalid, Obj
from engine.cluster.ssa import apply_patch, drops_owned, fields_of, record_update, strip_managed_fields

T1, T2, T3 = "2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z", "2026-01-01T00:00:03Z"
OP = "operator"


def secret(data: dict[str, str] | None = None, **meta: Any) -> Obj:
    """A Secret manifest with the given data and extra metadata."""
    obj: Obj = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns", **meta}}
    if data is not None:
        obj["data"] = data
    return obj


def stored(obj: Obj, **server: Any) -> Obj:
    """obj as the store would hold it: with the server-set metadata the caller adds."""
    out = copy.deepcopy(obj)
    out["metadata"].update({"uid": "uid-1", "resourceVersion": "1", "creationTimestamp": T1, **server})
    return out


def entry(obj: Obj, manager: str, operation: str = "Apply") -> Obj:
    """The one managedFields entry of manager and operation."""
    [found] = [e for e in obj["metadata"]["managedFields"] if e["manager"] == manager and e["operation"] == operation]
    return dict(found)


def kubectl_edit(live: Obj, edit: Any, *, now: str = T2) -> Obj:
    """live after a non-apply write by kubectl that changes a copy through edit(copy)."""
    new = copy.deepcopy(live)
    edit(new)
    return record_update(live, new, "kubectl", now=now)


class TestCreate:
    def test_absent_object_is_created_from_the_applied_config(self) -> None:
        """Applying to nothing gives the applied object, with one Apply entry for the manager."""
        out = apply_patch(None, secret({"a": "QQ=="}, labels={"app": "x"}), OP, force=False, now=T1)
        assert strip_managed_fields(out) == secret({"a": "QQ=="}, labels={"app": "x"})
        assert out["metadata"]["managedFields"] == [{
            "manager": OP, "operation": "Apply", "apiVersion": "v1", "time": T1, "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:a": {}}, "f:metadata": {"f:labels": {"f:app": {}}}},
        }]

    def test_manager_owns_every_applied_leaf(self) -> None:
        """Every applied leaf is owned, and identity fields are not."""
        applied = secret({"a": "QQ==", "b": "Qg=="}) | {"type": "Opaque"}
        out = apply_patch(None, applied, OP, force=False, now=T1)
        assert fields_of(out, OP) == {("data", "a"), ("data", "b"), ("type",)}

    def test_inputs_are_left_untouched(self) -> None:
        """Neither live nor the applied config is mutated."""
        live = apply_patch(None, secret({"a": "1"}), OP, force=False, now=T1)
        applied = secret({"b": "2"})
        live_before, applied_before = copy.deepcopy(live), copy.deepcopy(applied)
        apply_patch(live, applied, OP, force=True, now=T2)
        assert (live, applied) == (live_before, applied_before)


class TestMerge:
    def test_maps_merge_key_by_key_and_scalars_are_replaced(self) -> None:
        """An apply sets its keys and replaces scalars, keeping keys it never applied."""
        live = stored(secret({"a": "1"}, labels={"keep": "me"}) | {"type": "Opaque"})
        out = apply_patch(live, secret({"b": "2"}, labels={"app": "x"}) | {"type": "kv"}, OP, force=True, now=T2)
        assert out["data"] == {"a": "1", "b": "2"}
        assert out["metadata"]["labels"] == {"keep": "me", "app": "x"}
        assert out["type"] == "kv"

    def test_key_another_manager_added_survives_reapply(self) -> None:
        """A data key kubectl added stays when the operator applies its own keys again."""
        live = apply_patch(None, secret({"password": "cA=="}), OP, force=False, now=T1)
        live = kubectl_edit(live, lambda o: o["data"].update(extra="eA=="))
        out = apply_patch(live, secret({"password": "cA=="}), OP, force=False, now=T3)
        assert out["data"] == {"password": "cA==", "extra": "eA=="}
        assert fields_of(out, "kubectl", "Update") == {("data", "extra")}
        assert fields_of(out, OP) == {("data", "password")}


class TestDroppedFields:
    def test_field_no_longer_applied_is_removed(self) -> None:
        """A key the manager stops applying leaves the object and its set."""
        live = apply_patch(None, secret({"a": "1", "b": "2"}), OP, force=False, now=T1)
        out = apply_patch(live, secret({"a": "1"}), OP, force=False, now=T2)
        assert out["data"] == {"a": "1"}
        assert fields_of(out, OP) == {("data", "a")}

    def test_field_another_applier_also_owns_stays(self) -> None:
        """A dropped key that another manager applied with the same value stays, owned by that one."""
        live = apply_patch(None, secret({"a": "1", "b": "2"}), OP, force=False, now=T1)
        live = apply_patch(live, secret({"b": "2"}), "helper", force=False, now=T2)
        assert ("data", "b") in fields_of(live, OP) & fields_of(live, "helper")
        out = apply_patch(live, secret({"a": "1"}), OP, force=False, now=T3)
        assert out["data"] == {"a": "1", "b": "2"}
        assert fields_of(out, "helper") == {("data", "b")}
        assert fields_of(out, OP) == {("data", "a")}

    def test_field_taken_over_by_an_update_stays(self) -> None:
        """A key kubectl rewrote belongs to kubectl, so the operator dropping it leaves it in place."""
        live = apply_patch(None, secret({"a": "1", "b": "2"}), OP, force=False, now=T1)
        live = kubectl_edit(live, lambda o: o["data"].update(b="3"))
        out = apply_patch(live, secret({"a": "1"}), OP, force=False, now=T3)
        assert out["data"] == {"a": "1", "b": "3"}


class TestConflicts:
    def test_changing_a_field_another_manager_owns_is_refused(self) -> None:
        """Without force, changing kubectl's value is a 409 that names the field and the manager."""
        live = apply_patch(None, secret({"password": "1"}), OP, force=False, now=T1)
        live = kubectl_edit(live, lambda o: o["data"].update(password="2"))
        with pytest.raises(Conflict) as caught:
            apply_patch(live, secret({"password": "1"}), OP, force=False, now=T3)
        err = caught.value
        assert err.code == 409
        assert err.message == 'Apply failed with 1 conflict: conflict with "kubectl" using v1: .data.password'
        assert [(c.field, c.message, c.reason) for c in err.causes] == [
            (".data.password", 'conflict with "kubectl" using v1', "FieldManagerConflict")]

    def test_several_conflicts_are_grouped_by_manager(self) -> None:
        """Conflicts with several managers are listed per manager, appliers without an apiVersion."""
        live = apply_patch(None, secret({"a": "1", "b": "1", "c": "1"}), "helm", force=False, now=T1)
        live = kubectl_edit(live, lambda o: o["data"].update(a="2", b="2"))
        with pytest.raises(Conflict) as caught:
            apply_patch(live, secret({"a": "9", "b": "9", "c": "9"}), OP, force=False, now=T3)
        assert caught.value.message == (
            'Apply failed with 3 conflicts: conflicts with "helm":\n- .data.c\n'
            'conflicts with "kubectl" using v1:\n- .data.a\n- .data.b')
        assert len(caught.value.causes) == 3

    def test_force_takes_ownership(self) -> None:
        """With force the value is set and the field moves to the applier; an emptied entry goes."""
        live = apply_patch(None, secret({"password": "1"}), OP, force=False, now=T1)
        live = kubectl_edit(live, lambda o: o["data"].update(password="2"))
        out = apply_patch(live, secret({"password": "1"}), OP, force=True, now=T3)
        assert out["data"] == {"password": "1"}
        assert fields_of(out, OP) == {("data", "password")}
        assert fields_of(out, "kubectl", "Update") == set()
        assert [e["manager"] for e in out["metadata"]["managedFields"]] == [OP]

    def test_applying_the_same_value_shares_ownership(self) -> None:
        """Applying a value another manager already set is no conflict; both own the field."""
        live = kubectl_edit(stored(secret({"a": "1"})), lambda o: o["data"].update(b="2"))
        out = apply_patch(live, secret({"b": "2"}), OP, force=False, now=T3)
        assert ("data", "b") in fields_of(out, OP) & fields_of(out, "kubectl", "Update")


class TestNoop:
    def test_reapplying_the_same_config_returns_live_unchanged(self) -> None:
        """A repeated apply gives back an object equal to live, managedFields and time included."""
        live = stored(apply_patch(None, secret({"a": "1"}, labels={"x": "y"}), OP, force=False, now=T1))
        assert apply_patch(live, secret({"a": "1"}, labels={"x": "y"}), OP, force=False, now=T3) == live

    def test_changing_apply_moves_the_time(self) -> None:
        """An apply that changes the object stamps the manager's entry with now."""
        live = apply_patch(None, secret({"a": "1"}), OP, force=False, now=T1)
        out = apply_patch(live, secret({"a": "2"}), OP, force=False, now=T2)
        assert entry(out, OP)["time"] == T2

    def test_other_managers_keep_their_time(self) -> None:
        """A manager whose set shrinks under someone else's write keeps its own timestamp."""
        live = apply_patch(None, secret({"a": "1", "b": "1"}), OP, force=False, now=T1)
        out = kubectl_edit(live, lambda o: o["data"].update(a="2"), now=T3)
        assert entry(out, OP)["time"] == T1
        assert entry(out, OP)["fieldsV1"] == {"f:data": {"f:b": {}}}


class TestLists:
    def test_lists_are_atomic_by_default(self) -> None:
        """An ordinary list is owned as one field and replaced whole."""
        live = apply_patch(None, {**secret(), "spec": {"ports": [1, 2]}}, OP, force=False, now=T1)
        out = apply_patch(live, {**secret(), "spec": {"ports": [3]}}, OP, force=False, now=T2)
        assert out["spec"]["ports"] == [3]
        assert fields_of(out, OP) == {("spec", "ports")}

    def test_changing_an_atomic_list_another_manager_owns_conflicts(self) -> None:
        """An atomic list is one field, so changing any item conflicts with its owner."""
        live = apply_patch(None, {**secret(), "spec": {"ports": [1, 2]}}, "helm", force=False, now=T1)
        with pytest.raises(Conflict, match=r'conflict with "helm": \.spec\.ports$'):
            apply_patch(live, {**secret(), "spec": {"ports": [1, 2, 3]}}, OP, force=False, now=T2)

    def test_finalizers_are_a_set_each_manager_owning_its_own(self) -> None:
        """Finalizers of two managers both stay; dropping one removes only that one."""
        live = apply_patch(None, secret(finalizers=["a/one"]), "m1", force=False, now=T1)
        live = apply_patch(live, secret(finalizers=["b/two"]), "m2", force=False, now=T2)
        assert live["metadata"]["finalizers"] == ["a/one", "b/two"]
        assert entry(live, "m2")["fieldsV1"] == {"f:metadata": {"f:finalizers": {'v:"b/two"': {}}}}
        out = apply_patch(live, secret(finalizers=[]), "m1", force=False, now=T3)
        assert out["metadata"]["finalizers"] == ["b/two"]
        assert fields_of(out, "m1") == set()

    def test_owner_references_are_keyed_by_uid(self) -> None:
        """Owner references merge by uid and are owned item by item, as fieldsV1 k: entries."""
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u1"}
        live = apply_patch(None, secret(ownerReferences=[ref]), OP, force=False, now=T1)
        other = {**ref, "name": "p", "uid": "u2"}
        out = apply_patch(live, secret(ownerReferences=[other]), "m2", force=False, now=T2)
        assert [r["uid"] for r in out["metadata"]["ownerReferences"]] == ["u1", "u2"]
        assert entry(out, "m2")["fieldsV1"] == {"f:metadata": {"f:ownerReferences": {'k:{"uid":"u2"}': {
            ".": {}, "f:apiVersion": {}, "f:kind": {}, "f:name": {}, "f:uid": {}}}}}

    def test_extra_list_map_keys_make_lists_granular(self) -> None:
        """With conditions keyed by type, two managers each own their own condition."""
        keys = {("status", "conditions"): ("type",)}
        ready, synced = {"type": "Ready", "status": "True"}, {"type": "Synced", "status": "False"}
        live = apply_patch(None, {**secret(), "status": {"conditions": [ready]}}, "m1",
                           force=False, now=T1, subresource="status", list_map_keys=keys)
        out = apply_patch(live, {**secret(), "status": {"conditions": [synced]}}, "m2",
                          force=False, now=T2, subresource="status", list_map_keys=keys)
        assert out["status"]["conditions"] == [ready, synced]
        assert fields_of(out, "m2") == {("status", "conditions", 'k:{"type":"Synced"}'),
                                        ("status", "conditions", 'k:{"type":"Synced"}', "type"),
                                        ("status", "conditions", 'k:{"type":"Synced"}', "status")}

    def test_keyed_item_without_its_key_is_invalid(self) -> None:
        """An owner reference without a uid is refused as invalid."""
        with pytest.raises(Invalid, match="omits key field"):
            apply_patch(None, secret(ownerReferences=[{"name": "o"}]), OP, force=False, now=T1)


class TestUnowned:
    def test_identity_and_server_fields_are_never_owned_nor_changed(self) -> None:
        """uid, resourceVersion and the like in an applied config neither count nor overwrite."""
        live = stored(apply_patch(None, secret({"a": "1"}), OP, force=False, now=T1))
        applied = secret({"a": "1"}, uid="other", resourceVersion="99", generation=7, creationTimestamp=T3,
                          selfLink="/x", deletionGracePeriodSeconds=3)
        out = apply_patch(live, applied, OP, force=False, now=T2)
        assert out == live
        assert fields_of(out, OP) == {("data", "a")}


class TestStatus:
    def test_status_apply_touches_only_status(self) -> None:
        """A status apply sets status only and records an entry with subresource status."""
        live = stored(apply_patch(None, {**secret(), "spec": {"x": 1}}, OP, force=False, now=T1))
        out = apply_patch(live, {**secret(), "spec": {"x": 2}, "status": {"phase": "Ready"}}, OP,
                          force=False, now=T2, subresource="status")
        assert out["spec"] == {"x": 1} and out["status"] == {"phase": "Ready"}
        status_entry = [e for e in out["metadata"]["managedFields"] if e.get("subresource") == "status"]
        assert status_entry == [{"manager": OP, "operation": "Apply", "apiVersion": "v1", "time": T2,
                                 "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:phase": {}}},
                                 "subresource": "status"}]

    def test_main_resource_apply_ignores_status(self) -> None:
        """Status in a main-resource apply is neither written nor owned."""
        live = stored({**secret(), "status": {"phase": "Old"}})
        out = apply_patch(live, {**secret({"a": "1"}), "status": {"phase": "New"}}, OP, force=False, now=T2)
        assert out["status"] == {"phase": "Old"}
        assert fields_of(out, OP) == {("data", "a")}


class TestRecordUpdate:
    def test_create_owns_everything_with_map_markers(self) -> None:
        """A create by Update owns every field, maps it created marked with '.'."""
        out = record_update(None, secret({"a": "1"}, labels={"x": "y"}), "kubectl", now=T1)
        assert entry(out, "kubectl", "Update") == {
            "manager": "kubectl", "operation": "Update", "apiVersion": "v1", "time": T1, "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {".": {}, "f:x": {}}}},
        }

    def test_removed_fields_leave_every_set(self) -> None:
        """A key a write deletes is owned by nobody afterwards."""
        live = apply_patch(None, secret({"a": "1", "b": "2"}), OP, force=False, now=T1)
        out = kubectl_edit(live, lambda o: o["data"].pop("b"))
        assert fields_of(out, OP) == {("data", "a")}
        assert fields_of(out, "kubectl", "Update") == set()
        assert [e["manager"] for e in out["metadata"]["managedFields"]] == [OP]

    def test_noop_update_keeps_managed_fields(self) -> None:
        """A write that changes nothing leaves managedFields exactly as they were."""
        live = apply_patch(None, secret({"a": "1"}), OP, force=False, now=T1)
        assert record_update(live, copy.deepcopy(live), "kubectl", now=T3) == live

    def test_status_update_records_its_subresource(self) -> None:
        """A status write is recorded in its own entry, marked with the subresource."""
        live = record_update(None, secret({"a": "1"}), "kubectl", now=T1)
        new = {**copy.deepcopy(live), "status": {"phase": "Ready"}}
        out = record_update(live, new, "ctrl", now=T2, subresource="status")
        assert entry(out, "ctrl", "Update")["subresource"] == "status"
        assert fields_of(out, "ctrl", "Update") == {("status",), ("status", "phase")}
        assert fields_of(out, "kubectl", "Update") == fields_of(live, "kubectl", "Update")


def test_entries_are_one_per_manager_operation_and_subresource() -> None:
    """Repeated writes keep one entry per (manager, operation, subresource), Apply entries first."""
    live = apply_patch(None, secret({"a": "1"}), OP, force=False, now=T1)
    live = kubectl_edit(live, lambda o: o["data"].update(b="2"))
    live = kubectl_edit(live, lambda o: o["data"].update(c="3"), now=T3)
    live = apply_patch(live, {**secret(), "status": {"p": 1}}, OP, force=False, now=T3, subresource="status")
    rows = [(e["manager"], e["operation"], e.get("subresource")) for e in live["metadata"]["managedFields"]]
    assert rows == [(OP, "Apply", None), (OP, "Apply", "status"), ("kubectl", "Update", None)]
    assert fields_of(live, "kubectl", "Update") == {("data", "b"), ("data", "c")}


def test_strip_managed_fields_copies() -> None:
    """strip_managed_fields drops managedFields from a copy and leaves the original alone."""
    live = apply_patch(None, secret({"a": "1"}), OP, force=False, now=T1)
    assert "managedFields" not in strip_managed_fields(live)["metadata"]
    assert "managedFields" in live["metadata"]


class TestDropsOwned:
    """drops_owned: would an apply of this config remove a field the manager owns from its last apply?"""

    def applied(self, data: dict[str, str], **meta: Any) -> Obj:
        return apply_patch(None, secret(data, **meta), OP, force=True, now=T1)

    def test_the_same_config_drops_nothing(self) -> None:
        live = self.applied({"a": "QQ=="}, labels={"app": "x"})
        assert not drops_owned(live, secret({"a": "QQ=="}, labels={"app": "x"}), OP)

    def test_a_key_or_label_no_longer_rendered_is_dropped(self) -> None:
        live = self.applied({"a": "QQ==", "ca.crt": "Qw=="}, labels={"app": "x", "tier": "y"})
        assert drops_owned(live, secret({"a": "QQ=="}, labels={"app": "x", "tier": "y"}), OP)
        assert drops_owned(live, secret({"a": "QQ==", "ca.crt": "Qw=="}, labels={"app": "x"}), OP)
        assert drops_owned(live, secret({"a": "QQ==", "ca.crt": None}, labels={"app": "x", "tier": "y"}), OP)
        assert drops_owned(live, secret(None, labels={"app": "x", "tier": "y"}), OP)

    def test_a_changed_value_or_a_new_field_is_not_a_drop(self) -> None:
        live = self.applied({"a": "QQ=="})
        assert not drops_owned(live, secret({"a": "Qg==", "b": "Qw=="}, labels={"new": "1"}), OP)

    def test_only_the_managers_own_apply_entry_counts(self) -> None:
        live = kubectl_edit(self.applied({"a": "QQ=="}), lambda o: o["data"].update(b="Qg=="))
        other = apply_patch(live, secret({"c": "Qw=="}), "someone-else", force=True, now=T2)
        assert not drops_owned(other, secret({"a": "QQ=="}), OP)
        assert drops_owned(other, secret({"a": "QQ=="}), "someone-else")
        assert not drops_owned(other, secret({"a": "QQ=="}), "kubectl")  # an Update entry is no apply

    def test_a_keyed_list_counts_as_the_list(self) -> None:
        owner = {"apiVersion": "v1", "kind": "X", "name": "x", "uid": "u1", "controller": True}
        live = self.applied({"a": "QQ=="}, ownerReferences=[owner])
        other = {**owner, "uid": "u2"}
        assert not drops_owned(live, secret({"a": "QQ=="}, ownerReferences=[other]), OP)
        assert drops_owned(live, secret({"a": "QQ=="}), OP)

    def test_status_and_main_resource_applies_are_apart(self) -> None:
        live = apply_patch(self.applied({"a": "QQ=="}), {**secret(), "status": {"phase": "Ready", "n": 1}}, OP,
                           force=True, now=T2, subresource="status")
        assert not drops_owned(live, secret({"a": "QQ=="}), OP)  # main: status is not its business
        assert not drops_owned(live, {**secret(), "status": {"phase": "Ready", "n": 2}}, OP, subresource="status")
        assert drops_owned(live, {**secret(), "status": {"phase": "Ready"}}, OP, subresource="status")
        assert drops_owned(live, secret(), OP, subresource="status")

    def test_identity_fields_are_never_owned_by_the_config(self) -> None:
        live = stored(secret({"a": "QQ=="}))
        live["metadata"]["managedFields"] = [{"manager": OP, "operation": "Apply", "apiVersion": "v1",
                                              "fieldsType": "FieldsV1",
                                              "fieldsV1": {"f:metadata": {"f:name": {}}, "f:data": {"f:a": {}}}}]
        assert drops_owned(live, secret({"a": "QQ=="}), OP)  # metadata.name is no field an apply owns

    def test_duplicate_entries_are_read_together(self) -> None:
        live = stored(secret({"a": "QQ==", "b": "Qg=="}))
        row = {"manager": OP, "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1"}
        live["metadata"]["managedFields"] = [{**row, "fieldsV1": {"f:data": {"f:a": {}}}},
                                             {**row, "fieldsV1": {"f:data": {"f:b": {}}}}]
        assert drops_owned(live, secret({"a": "QQ=="}), OP)
        assert not drops_owned(live, secret({"a": "QQ==", "b": "Qg=="}), OP)

    def test_agrees_with_the_field_set_formula(self) -> None:
        """Random configs and lives: the fast walk answers as the reference (the owned paths, cut before their
        first list item, against every node of the applied config)."""
        rng = random.Random(11)

        def value(depth: int) -> Any:
            roll = rng.random()
            if depth < 3 and roll < 0.35:
                return {rng.choice("abcd"): value(depth + 1) for _ in range(rng.randint(0, 3))}
            if roll < 0.45:
                return [rng.randint(0, 2) for _ in range(rng.randint(0, 2))]
            return rng.choice([None, "x", 1, True, ""])

        def config() -> Obj:
            obj = secret({k: "QQ==" for k in rng.sample("pqrs", rng.randint(0, 3))},
                         labels={k: "v" for k in rng.sample("lmn", rng.randint(0, 2))})
            obj["spec"] = value(0)
            if rng.random() < 0.3:
                obj["metadata"]["finalizers"] = rng.sample(["f1", "f2"], rng.randint(0, 2))
            if rng.random() < 0.3:
                obj["status"] = value(1)
            return obj

        for _ in range(400):
            subresource = rng.choice([None, "status"])
            live = apply_patch(None, config(), OP, force=True, now=T1, subresource=subresource)
            candidate = config()
            assert drops_owned(live, candidate, OP, subresource=subresource) == reference_drops_owned(
                live, candidate, OP, subresource), (live, candidate, subresource)


def reference_drops_owned(live: Obj, applied: Obj, manager: str, subresource: str | None) -> bool:
    """The formula drops_owned answers, spelled with field sets (slow)."""
    entry = ssa._read_entries(live).get((manager, "Apply", subresource))
    if entry is None or not entry.fields:
        return False
    wanted = {ssa._up_to_list(p) for p in ssa._nodes(ssa._config(applied, subresource), ssa.GRANULAR_LISTS)}
    return any(ssa._up_to_list(path) not in wanted for path in entry.fields)
