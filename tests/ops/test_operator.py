"""The operator's wiring in-process on in-memory clusters: refusing bad rules, readiness, leader gating, flags."""

from __future__ import annotations

import contextlib
import contextvars
import io
import shutil
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from engine.cli import build_parser, main
from engine.clock import SystemClock
from engine.operator import Operator, Options, run, seconds
from engine.runtime.clusters import Registration
from offline.cluster.memory import MemoryCluster

ROOT = Path(__file__).resolve().parents[2]


LEASE = ("coordination.k8s.io/v1", "Lease", "c5c3-system", "c5c3-operator")
"""The leader election's Lease (Options' defaults)."""


def options(rules: Path, **changes: object) -> Options:
    base = Options(rules=rules, metrics_bind_address="127.0.0.1:0", health_probe_bind_address="127.0.0.1:0",
                   clusters_namespace="", watch_timeout=0.2)
    return Options(**{**base.__dict__, **changes})  # type: ignore[arg-type]


def wait_for(what: Callable[[], bool], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not what():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@contextlib.contextmanager
def running(operator: Operator) -> Iterator[threading.Event]:
    stop = threading.Event()
    thread = threading.Thread(target=contextvars.copy_context().run, args=(operator.run, stop))
    thread.start()
    try:
        yield stop
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive()


@pytest.fixture
def cluster() -> MemoryCluster:
    return MemoryCluster("", clock=SystemClock(), permissive=True)


def test_broken_rules_refuse_to_start(rules_dir: Callable[..., Path]) -> None:
    """Rules that do not lint clean: exit 1, each lint error printed, nothing started."""
    rules = rules_dir("kind: Widget\nsteps: nope\n")
    out = io.StringIO()
    assert run(options(rules), out=out) == 1
    text = out.getvalue()
    assert "widget.yaml:" in text
    assert "not starting" in text


def test_a_start_compiles_each_rule_file_once(rules_dir: Callable[..., Path], cluster: MemoryCluster,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """``engine run`` lints the rules and serves the kinds linting compiled: one compile per rule file."""
    from engine.rules.compile import Compiler

    compiled: list[Path] = []
    original = Compiler.compile

    def counting(self: Compiler, path: Path) -> object:
        compiled.append(path)
        return original(self, path)

    monkeypatch.setattr(Compiler, "compile", counting)
    stop = threading.Event()
    stop.set()  # starts, finds the stop signal, stops
    assert run(options(rules_dir()), management=cluster, stop=stop, out=io.StringIO()) == 0
    assert [path.name for path in compiled] == ["widget.yaml"]


def test_ready_once_synced_and_probes_say_so(rules_dir: Callable[..., Path], cluster: MemoryCluster) -> None:
    """/readyz answers 200 once the caches have synced; /metrics serves the operator's families."""
    operator = Operator(options(rules_dir()), cluster)
    assert operator.ready() is False
    with running(operator):
        assert wait_for(operator.ready)
        assert wait_for(lambda: len(operator_endpoints(operator)) == 2)


def operator_endpoints(operator: Operator) -> list[str]:
    return [t.name for t in threading.enumerate() if t.name in ("metrics http", "probes http")]


def test_registrations_hold_readiness_until_listed(rules_dir: Callable[..., Path], cluster: MemoryCluster) -> None:
    """With a clusters namespace, readiness also waits for the registration Secrets to be listed."""
    operator = Operator(options(rules_dir(), clusters_namespace="c5c3-clusters"), cluster,
                        target_factory=lambda r: MemoryCluster(r.name, clock=SystemClock()))
    operator.manager.start()
    assert operator.manager.ready()
    assert operator.ready() is False
    assert operator.registrations is not None
    operator.registrations.sync()
    assert operator.ready() is True


def test_only_one_of_two_operators_leads(rules_dir: Callable[..., Path], cluster: MemoryCluster) -> None:
    """Two replicas on one Lease: exactly one leads; when it stops, it releases and the other takes over."""
    rules = rules_dir()
    fast = {"leader_elect": True, "lease_duration": 2.0, "renew_deadline": 1.5, "retry_period": 0.2}
    a = Operator(options(rules, leader_election_identity="a", **fast), cluster)
    b = Operator(options(rules, leader_election_identity="b", **fast), cluster)
    with running(a) as stop_a, running(b) as stop_b:
        assert wait_for(lambda: leads(a) or leads(b))
        time.sleep(0.5)
        assert leads(a) != leads(b)
        leader, follower, stop_leader = (a, b, stop_a) if leads(a) else (b, a, stop_b)
        assert follower.registry.get_sample_value("c5c3_operator_leader_status") == 0
        before = cluster.get(*LEASE)["metadata"]["resourceVersion"]
        stop_leader.set()
        assert wait_for(lambda: leads(follower), 30)
        # Released, not lapsed: the leader cleared the holder on its way out (a follower taking over an expired
        # Lease never writes it empty). How soon the follower took over depends on the machine's load.
        changes = cluster.watch(LEASE[0], LEASE[1], LEASE[2], resource_version=before, timeout=0)
        assert "" in [(change["object"].get("spec") or {}).get("holderIdentity") for change in changes
                      if change["object"]["metadata"].get("name") == LEASE[3]]
        assert follower.registry.get_sample_value("c5c3_operator_leader_status") == 1
        assert not leads(leader)


def leads(operator: Operator) -> bool:
    return operator.leading is not None and operator.leading.is_set()


def test_without_leader_election_the_operator_leads(rules_dir: Callable[..., Path], cluster: MemoryCluster) -> None:
    """No --leader-elect: passes run at once and leader_status reads 1."""
    operator = Operator(options(rules_dir()), cluster)
    assert operator.leading is None
    assert operator.registry.get_sample_value("c5c3_operator_leader_status") == 1


def test_the_target_factory_gets_the_registration(rules_dir: Callable[..., Path], cluster: MemoryCluster) -> None:
    """Registered clusters are built by the injected factory, with the Secret's name."""
    built: list[Registration] = []

    def factory(registration: Registration) -> MemoryCluster:
        built.append(registration)
        return MemoryCluster(registration.name, clock=SystemClock())

    import base64
    cluster.create({"apiVersion": "v1", "kind": "Secret", "metadata": {
        "name": "edge-1", "namespace": "c5c3-clusters",
        "labels": {"sigs.k8s.io/multicluster-runtime-kubeconfig": "true"}},
        "data": {"kubeconfig": base64.b64encode(b"apiVersion: v1\nkind: Config\n").decode()}})
    operator = Operator(options(rules_dir(), clusters_namespace="c5c3-clusters"), cluster, target_factory=factory)
    with running(operator):
        assert wait_for(lambda: operator.manager.clusters.names() == ["", "edge-1"])
    assert [r.name for r in built] == ["edge-1"]
    assert operator.manager.clusters.names() == [""]  # disengaged on shutdown


def test_a_bind_address_in_use_refuses_to_start(rules_dir: Callable[..., Path], cluster: MemoryCluster) -> None:
    """A probe address already taken: the operator reports it and starts nothing (metrics included)."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        operator = Operator(options(rules_dir(), health_probe_bind_address=f"127.0.0.1:{port}"), cluster)
        with pytest.raises(OSError):
            operator.run(threading.Event())
    assert operator_endpoints(operator) == []


def test_an_address_in_use_is_named_before_the_banner(rules_dir: Callable[..., Path],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A second embedded engine run: one line naming the flag and the port, no banner, no cluster started."""
    import socket

    from simulators.embedded import main as embedded

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = io.StringIO()
        status = embedded(options(rules_dir(), metrics_bind_address=f"127.0.0.1:{port}"),
                          crds=ROOT / "deploy" / "crds", out=out)
    assert status == 1
    assert out.getvalue() == ""
    assert capsys.readouterr().err.strip() == (
        f"engine run: --metrics-bind-address 127.0.0.1:{port}: port {port} on 127.0.0.1 is already in use")


def test_a_crd_a_cluster_would_refuse_stops_the_embedded_run_before_it_starts(
        rules_dir: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """engine run on the embedded clusters with a CRD the API server would refuse: exit 1, the lint line of each
    refusal and one line saying nothing started, no banner, no traceback."""
    from simulators.embedded import main as embedded

    crds = tmp_path / "crds"
    shutil.copytree(ROOT / "deploy" / "crds", crds)
    users = crds / "c5c3.io_keystoneusers.yaml"
    users.write_text(users.read_text().replace("type: date", "type: datetime", 1))
    out = io.StringIO()
    status = embedded(options(rules_dir(), metrics_bind_address="127.0.0.1:0"), crds=crds, out=out)
    assert status == 1
    assert out.getvalue() == ""
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"{users}:") and lines[0].endswith(
        '.type: Invalid value: "datetime": must be one of boolean,date,integer,number,string'), lines
    assert lines[1] == "engine run: a real API server would refuse these CRDs; nothing started"


def test_run_names_a_probe_address_in_use(rules_dir: Callable[..., Path], cluster: MemoryCluster,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """engine run --kubeconfig with the probe port taken: exit 1, the log names the flag and the port."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        opts = options(rules_dir(), metrics_bind_address="127.0.0.1:0", health_probe_bind_address=f"127.0.0.1:{port}")
        status = run(opts, management=cluster, out=io.StringIO())
    assert status == 1
    named = f"--health-probe-bind-address 127.0.0.1:{port}: port {port} on 127.0.0.1 is already in use"
    assert named in capsys.readouterr().err


def test_seconds_reads_go_durations_and_plain_numbers() -> None:
    """15s, 500ms, 1m and 2 are all durations in seconds."""
    assert [seconds(t) for t in ("15s", "500ms", "1m", "2")] == [15.0, 0.5, 60.0, 2.0]


def test_run_flags_and_their_defaults() -> None:
    """engine run's flags parse with controller-runtime's defaults, except 8 workers (decision 0011)."""
    args = build_parser().parse_args(["run"])
    assert args.rules is None  # resolved at run: rules/ of the working directory, else the installed rules
    assert args.max_concurrent_reconciles == 8 == Options().max_concurrent_reconciles
    assert args.clusters_namespace == "c5c3-clusters"
    assert args.leader_elect is False
    assert (args.leader_election_namespace, args.leader_election_id) == ("c5c3-system", "c5c3-operator")
    assert (args.metrics_bind_address, args.health_probe_bind_address) == (":8080", ":8081")
    assert (args.leader_elect_lease_duration, args.leader_elect_renew_deadline,
            args.leader_elect_retry_period) == (15.0, 10.0, 2.0)
    args = build_parser().parse_args(["run", "--clusters-namespace", "", "--leader-elect-lease-duration", "3s"])
    assert args.clusters_namespace == ""
    assert args.leader_elect_lease_duration == 3.0


@pytest.mark.parametrize("argv", [
    ["run", "--max-concurrent-reconciles", "0"],
    ["run", "--leader-elect-retry-period", "soon"],
    ["run", "--log-level", "chatty"],
])
def test_bad_flags_exit_2(argv: list[str]) -> None:
    """argparse refuses bad values before anything starts."""
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2


def test_metrics_endpoint_serves_while_running(rules_dir: Callable[..., Path], cluster: MemoryCluster) -> None:
    """While the operator runs, its metrics endpoint answers with the leader gauge."""
    operator = Operator(options(rules_dir(), metrics_bind_address="127.0.0.1:18999"), cluster)
    with running(operator):
        assert wait_for(lambda: _get("http://127.0.0.1:18999/metrics") is not None)
        body = _get("http://127.0.0.1:18999/metrics") or ""
    assert "c5c3_operator_leader_status 1.0" in body


def _get(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return str(answer.read().decode())
    except OSError:
        return None


def test_run_gives_the_caller_its_secret_sink_back(rules_dir: Callable[..., Path], cluster: MemoryCluster) -> None:
    """An in-process run installs its own secret sink for its workers and restores the caller's on return,
    so passwords generated later in the same thread are not collected by a stopped operator's sink."""
    from engine.expr import current_sink

    stop = threading.Event()
    stop.set()
    before = current_sink.get()
    assert run(options(rules_dir()), management=cluster, stop=stop, out=io.StringIO()) == 0
    assert current_sink.get() is before
