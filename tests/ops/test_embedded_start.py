"""`engine run` on the embedded clusters, as a newcomer starts and stops it: what it prints, where it listens,
what it leaves behind."""

from __future__ import annotations

import ctypes
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.operator import Options
from simulators import embedded as embedded_module
from simulators.embedded import main as embedded

ROOT = Path(__file__).resolve().parents[2]
CRDS = ROOT / "deploy" / "crds"


def options(rules: Path, **changes: object) -> Options:
    base = Options(rules=rules, metrics_bind_address="127.0.0.1:0", health_probe_bind_address="127.0.0.1:0",
                   clusters_namespace="", watch_timeout=0.2)
    return Options(**{**base.__dict__, **changes})  # type: ignore[arg-type]


def stopped() -> threading.Event:
    """A stop already asked for: the run starts, finds it and stops gracefully (as after Ctrl-C)."""
    stop = threading.Event()
    stop.set()
    return stop


@pytest.fixture
def temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The process's temporary folder, for this test alone."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def test_rules_that_do_not_lint_print_no_banner(rules_dir: Callable[..., Path], temp_dir: Path) -> None:
    """A rule set that fails lint: its errors and `not starting`, but no "Try, in another shell" banner and no
    cluster started (no kubeconfig written)."""
    out = io.StringIO()
    status = embedded(options(rules_dir("kind: Widget\nsteps: nope\n")), crds=CRDS, out=out, stop=stopped())
    assert status == 1
    text = out.getvalue()
    assert "not starting" in text
    assert "Try, in another shell" not in text
    assert "KUBECONFIG" not in text
    # Only the run's own folder: other tests' threads in this process may cache discovery in the patched tempdir.
    assert [path.name for path in temp_dir.iterdir() if path.name.startswith("engine-run-")] == []


def test_the_kubeconfig_folder_goes_at_stop(rules_dir: Callable[..., Path], temp_dir: Path) -> None:
    """The banner's kubeconfig lives in an `engine-run-*` folder of the temporary folder while the run lasts; a
    graceful stop (Ctrl-C, SIGTERM) removes it."""
    out = io.StringIO()
    assert embedded(options(rules_dir()), crds=CRDS, out=out, stop=stopped()) == 0
    assert "Try, in another shell" in out.getvalue()
    assert f"export KUBECONFIG={temp_dir}/engine-run-" in out.getvalue()
    assert [p.name for p in temp_dir.iterdir() if p.name.startswith("engine-run-")] == []


def test_a_kubeconfig_out_stays(rules_dir: Callable[..., Path], tmp_path: Path) -> None:
    """--kubeconfig-out names a file the user keeps: it stays after the stop."""
    kept = tmp_path / "kubeconfig"
    assert embedded(options(rules_dir()), crds=CRDS, kubeconfig_out=kept, out=io.StringIO(), stop=stopped()) == 0
    assert kept.is_file()


def test_embedded_metrics_and_probes_listen_on_localhost_only(rules_dir: Callable[..., Path],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """`engine run` without a cluster: the default addresses (:8080, :8081, no host) listen on 127.0.0.1, not on
    every interface; a host given explicitly is kept."""
    bound: list[tuple[str, str]] = []
    real = embedded_module.bind_endpoints

    def spying(opts: Options) -> list:  # type: ignore[type-arg]
        endpoints = real(opts)
        bound.extend((e.name, e.address[0]) for e in endpoints)
        return endpoints

    monkeypatch.setattr(embedded_module, "bind_endpoints", spying)
    opts = options(rules_dir(), metrics_bind_address=":0", health_probe_bind_address=":0")
    assert embedded(opts, crds=CRDS, out=io.StringIO(), stop=stopped()) == 0
    assert sorted(bound) == [("metrics", "127.0.0.1"), ("probes", "127.0.0.1")]
    bound.clear()
    opts = options(rules_dir(), metrics_bind_address="0.0.0.0:0", health_probe_bind_address="0")
    assert embedded(opts, crds=CRDS, out=io.StringIO(), stop=stopped()) == 0
    assert bound == [("metrics", "0.0.0.0")]


def test_leftovers_of_a_killed_run_are_named_in_plain_words(rules_dir: Callable[..., Path], temp_dir: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A private folder a killed operator left (client keys of a target cluster): removed at start, said in
    one info line a newcomer can read, without the internal name "client-key directory"."""
    from engine.cluster.kube.config import PRIVATE_PREFIX

    left = temp_dir / f"{PRIVATE_PREFIX}999999999-deadbeef-x"  # no such pid
    left.mkdir()
    assert embedded(options(rules_dir()), crds=CRDS, out=io.StringIO(), stop=stopped()) == 0
    assert not left.exists()
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    infos = [line["message"] for line in lines if line.get("level") == "info"]
    assert not any("client-key directory" in msg for msg in infos), infos
    assert ("cleaned up 1 temporary folder left by an earlier engine run that was killed before it could "
            "clean up (nothing to do)") in infos, infos


def to_another_thread(process: subprocess.Popen[bytes], signum: signal.Signals) -> None:
    """Send ``signum`` to one of the process's threads other than the main one, as the kernel may deliver a
    process's signal (glibc's ``tgkill``): the oldest, which lives as long as the run (a newer one may be a
    request's, gone before it takes the signal)."""
    def started(tid: int) -> float:  # /proc's starttime, in clock ticks since boot (after the parenthesised name)
        try:
            return int(Path(f"/proc/{process.pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()[19])
        except OSError:  # gone meanwhile
            return float("inf")

    threads = [int(tid) for tid in os.listdir(f"/proc/{process.pid}/task") if int(tid) != process.pid]
    oldest = min(threads, key=lambda tid: (started(tid), tid))
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.tgkill(process.pid, oldest, int(signum)) == 0, os.strerror(ctypes.get_errno())


def to_the_process(process: subprocess.Popen[bytes], signum: signal.Signals) -> None:
    process.send_signal(signum)


@pytest.mark.parametrize(("signum", "after", "send"), [
    (signal.SIGTERM, "Stop with Ctrl-C", to_the_process),  # right after the banner: the operator is starting
    (signal.SIGINT, "Stop with Ctrl-C", to_the_process),
    (signal.SIGTERM, " worker(s) on ", to_another_thread),  # running: the main thread waits on the stop event
])
def test_a_signal_stops_it_and_the_kubeconfig_folder_goes(tmp_path: Path, signum: signal.Signals, after: str,
                                                          send: Callable[[subprocess.Popen[bytes], signal.Signals],
                                                                         None]) -> None:
    """`engine run` as a process, stopped by SIGTERM or Ctrl-C once its banner is out or once it runs, whichever
    of its threads takes the signal: exit 0, and its temporary folder holds no `engine-run-*` folder any more."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("KUBERNETES_SERVICE_HOST", "KUBECONFIG")}
    env["TMPDIR"] = str(temp)
    out = tmp_path / "out.txt"
    with out.open("wb") as sink:
        process = subprocess.Popen([sys.executable, "-m", "engine.cli", "run", "--metrics-bind-address", "0",
                                    "--health-probe-bind-address", "0"], cwd=ROOT, env=env, stdout=sink,
                                   stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while after not in out.read_text(errors="replace") and process.poll() is None:
                assert time.monotonic() < deadline, out.read_text(errors="replace")
                time.sleep(0.1)
            if send is to_another_thread:
                time.sleep(1)  # the line comes just before the main thread's wait
            assert [p.name[:11] for p in temp.iterdir() if p.name.startswith("engine-run-")] == ["engine-run-"]
            send(process, signum)
            try:
                assert process.wait(30) == 0, out.read_text(errors="replace")
            except subprocess.TimeoutExpired:
                pytest.fail(f"still running 30 s after {signum.name}:\n{out.read_text(errors='replace')}")
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(10)
    assert [p.name for p in temp.iterdir() if p.name.startswith("engine-run-")] == []
