"""`engine demo`: the README's first command tells one order's whole life, and never a password."""

from __future__ import annotations

import base64
import io
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cluster.api import Invalid
from engine.expr.functions import SecretSink, use_sink
from simulators import demo as story
from simulators import korc
from simulators.base import pending
from simulators.korc import user_id


def test_engine_demo_tells_the_whole_story(tmp_path: Path) -> None:
    """`engine demo` exits 0 from any folder: Ready, rotated to generation 2, then the order gone."""
    done = subprocess.run(
        [sys.executable, "-m", "engine.cli", "demo"], capture_output=True, text=True, check=False, cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    sections = [out.index(f"== {title}") for title in ("Provision", "Delivery", "Rotation", "Teardown")]
    assert sections == sorted(sections)
    provision, delivery, rotation, teardown = (
        out[a:b] for a, b in zip(sections, [*sections[1:], len(out)], strict=True)
    )
    assert "+00:00:00  created User openstack/workflow-cebe0e7a-user-user-probe" in provision
    assert "UserReady=True/UserProvisioned" in provision
    assert "Ready=True/AllReady" in delivery
    assert "created Secret tenant-a/workflow-credentials" in delivery
    assert "passwordGeneration=2" in rotation
    assert "deleted Secret openstack/workflow-cebe0e7a-user-password-v1" in rotation
    assert "updated Secret tenant-a/workflow-credentials (clouds.yaml changed; password changed)" in rotation
    assert "KeystoneUser tenant-a/workflow is gone" in teardown
    assert out.rstrip().endswith("demo finished: provisioned, delivered, rotated and torn down.")


def test_demo_never_prints_a_generated_password(caplog: pytest.LogCaptureFixture,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """No password the rules generated appears in the timeline, on stderr or in the engine's logs."""
    out = io.StringIO()
    sink = SecretSink()
    with caplog.at_level(logging.DEBUG, logger="engine"), use_sink(sink):
        assert story.main(out=out) == 0
    passwords = sink.values()
    assert len(passwords) >= 2  # at least generation 1 and the rotation's generation 2
    printed = out.getvalue() + capsys.readouterr().err + caplog.text
    for password in passwords:
        assert password not in printed
        assert base64.b64encode(password.encode()).decode() not in printed


def test_demo_controllers_go_quiet_once_the_order_is_delivered() -> None:
    """After delivery the simulated K-ORC and ESO have nothing left to do (status writes do not re-trigger)."""
    demo = story.Demo(io.StringIO())
    demo.manager.start()
    demo.cluster.create(story.ORDER)
    demo.run(story.PATIENCE, until=lambda: demo.condition("Ready") == "True")
    demo.run(story.PATIENCE)
    assert not pending(demo.simulators)
    assert demo.eso.store == {"openstack/keystone/openstack/workflow-cebe0e7a-user/service-accounts/credentials": 1}
    assert demo.korc.names() == {"workflow": user_id("workflow")}


def test_an_existing_keystone_user_is_refused_as_a_collision() -> None:
    """With a user of that name already in the simulated Keystone, the probe finds it and the order is refused."""
    demo = story.Demo(io.StringIO())
    demo.korc.keystone[(korc.ANY_DOMAIN, "workflow")] = user_id("workflow")
    demo.manager.start()
    demo.cluster.create(story.ORDER)
    demo.run(story.PATIENCE, until=lambda: demo.status("conditions") is not None and any(
        c["type"] == "UserReady" and c["reason"] == "ServiceAccountCollision" for c in demo.status("conditions")
    ))
    assert demo.condition("Ready") == "False"
    assert demo.password_secrets() == []


def test_a_story_that_stalls_fails_instead_of_hanging() -> None:
    """Without K-ORC the user never becomes ready: the story stops with the step it was waiting for."""
    out = io.StringIO()
    demo = story.Demo(out)
    demo.simulators = (demo.eso,)
    with pytest.raises(story.StoryFailed, match="still waiting after 0:05:00"):
        demo.story()
    assert "UserReady=False/ProbingForCollision" in out.getvalue()


def test_demo_into_a_closed_pipe_ends_quietly() -> None:
    """`engine demo | true` (the reader gone at once) ends without a traceback."""
    import subprocess
    import sys

    done = subprocess.run(f"{sys.executable} -m engine.cli demo | true", shell=True, capture_output=True,
                          text=True, check=False)
    assert "Traceback" not in done.stderr
    assert "BrokenPipeError" not in done.stderr


def test_the_demo_cluster_admits_children_against_the_external_schemas() -> None:
    """The demo's cluster carries the stand-in schemas of deploy/crds/external/: a K-ORC User with an
    empty cloud name is refused there as K-ORC's CRD refuses it."""
    world = story.Demo(io.StringIO())
    user = {
        "apiVersion": "openstack.k-orc.cloud/v1alpha1", "kind": "User",
        "metadata": {"name": "billing-user", "namespace": story.CP_NAMESPACE},
        "spec": {"cloudCredentialsRef": {"secretName": "k-orc-clouds-yaml", "cloudName": ""},
                 "resource": {"name": "billing"}},
    }
    with pytest.raises(Invalid, match=r"spec\.cloudCredentialsRef\.cloudName"):
        world.cluster.create(user)
