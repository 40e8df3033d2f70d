"""The kube cluster imports only the parts of the ``kubernetes`` library it uses (decision 0036).

Each check runs in a fresh interpreter: what a process imports is the point, and this test process has
imported the whole library long before.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

NOT_ON_THE_RUN_PATH = ("websocket", "requests", "requests_oauthlib", "oauthlib", "kubernetes.stream",
                       "kubernetes.leaderelection", "kubernetes.informer", "kubernetes.utils.create_from_yaml")
"""Modules ``engine run`` held before: websocket streams, the library's leader election and informers, YAML
creation, and the OIDC refresh client (``requests``, ``oauthlib``)."""


def run_python(code: str, **env: str) -> dict[str, object]:
    """Run ``code`` in a fresh interpreter at the repository root; the JSON it prints last."""
    import os

    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, **env})
    assert done.returncode == 0, done.stderr[-2000:]
    answer: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


def test_the_operator_with_a_kubeconfig_loads_none_of_the_library_parts_it_does_not_use(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "not-a-real-token"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }))
    answer = run_python(f"""
        import json, sys
        from pathlib import Path
        import engine.operator
        from engine.operator import Options, management_cluster
        cluster = management_cluster(Options(rules=Path("rules"), kubeconfig=Path({str(kubeconfig)!r})))
        print(json.dumps({{"loaded": [m for m in {NOT_ON_THE_RUN_PATH!r} if m in sys.modules],
                          "kind": type(cluster).__name__}}))
    """)
    assert answer == {"loaded": [], "kind": "KubeCluster"}


def test_the_whole_library_is_there_for_any_other_user_of_it() -> None:
    answer = run_python("""
        import json
        import engine.cluster.kube
        import kubernetes
        from kubernetes import config, stream, watch
        from kubernetes.utils import create_from_dict
        print(json.dumps({"version": kubernetes.__version__, "loader": callable(config.load_kube_config),
                          "incluster": callable(config.load_incluster_config), "watch": callable(watch.Watch),
                          "stream": callable(stream.stream), "utils": callable(create_from_dict),
                          "leaderelection": kubernetes.leaderelection.__name__}))
    """)
    from importlib.metadata import version

    assert answer == {"version": version("kubernetes"), "loader": True, "incluster": True, "watch": True,
                      "stream": True, "utils": True, "leaderelection": "kubernetes.leaderelection"}


OIDC_REFRESH = """
    import base64, json, sys, threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    def jwt(exp):
        part = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip("=")
        return f"{part({'alg': 'none'})}.{part({'exp': exp, 'sub': 'someone'})}.sig"

    FRESH = jwt(4102444800)  # 2100
    seen = []

    class Issuer(BaseHTTPRequestHandler):
        def log_message(self, *args): pass
        def answer(self, body):
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        def do_GET(self):
            seen.append(self.path)
            self.answer({"token_endpoint": f"http://127.0.0.1:{server.server_port}/token"})
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            seen.append(self.path)
            self.answer({"id_token": FRESH, "refresh_token": "refresh-2", "access_token": "a", "token_type": "Bearer",
                         "expires_in": 3600})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Issuer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    deferred_before = [m for m in ("requests_oauthlib", "oauthlib") if m in sys.modules]
    from engine.cluster.kube import api_client_from_kubeconfig
    deferred_after_import = [m for m in ("requests_oauthlib", "oauthlib") if m in sys.modules]
    client = api_client_from_kubeconfig({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"auth-provider": {"name": "oidc", "config": {
            "client-id": "operator", "client-secret": "s", "refresh-token": "refresh-1", "id-token": jwt(1),
            "idp-issuer-url": f"http://127.0.0.1:{server.server_port}"}}}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    })
    server.shutdown()
    print(json.dumps({"before": deferred_before, "after_import": deferred_after_import, "requests": seen,
                      "refreshed": client.configuration.api_key.get("BearerToken") == f"Bearer {FRESH}"}))
"""


def test_an_expired_oidc_token_is_still_refreshed_through_the_deferred_oauth_client() -> None:
    answer = run_python(OIDC_REFRESH, OAUTHLIB_INSECURE_TRANSPORT="1")  # the stand-in issuer speaks plain HTTP

    assert answer == {"before": [], "after_import": [], "requests": ["/.well-known/openid-configuration", "/token"],
                      "refreshed": True}
