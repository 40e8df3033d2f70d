"""The lean REST client against scripted 127.0.0.1 servers: answers framed by Content-Length, chunks or
close; connections reused and replaced after the server hangs up; urllib3's retries kept; TLS exactly as
the kubeconfig says; error answers decoded without quoting them; secrets never in an error."""

from __future__ import annotations

import base64
import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import Configuration
from kubernetes.client.exceptions import ApiException

from engine.cluster.api import ApiError, NotFound, ServerError
from engine.cluster.kube import api_client_from_kubeconfig
from engine.cluster.kube.config import configuration_for
from engine.cluster.kube.errors import translated
from engine.cluster.kube.http1 import ConnectFailed
from engine.cluster.kube.transport import LeanRestClient, install
from engine.cluster.kube.wire import WatchStream
from engine.cluster.kubeconfig import ClientSettings
from tests.cluster.http_stub import Answer, Stub, ok


@pytest.fixture
def stubs() -> Iterator[list[Stub]]:
    started: list[Stub] = []
    yield started
    for stub in started:
        stub.stop()


def serve(stubs: list[Stub], script: Any, tls: ssl.SSLContext | None = None) -> Stub:
    stub = Stub(script, tls=tls)
    stubs.append(stub)
    return stub


def client(url: str, **settings: Any) -> LeanRestClient:
    configuration = Configuration(host=url)
    for key, value in settings.items():
        setattr(configuration, key, value)
    return LeanRestClient(configuration)


def get(rest: LeanRestClient, url: str, path: str = "/api/v1/namespaces", headers: dict[str, str] | None = None) -> Any:
    return rest.request("GET", url + path, headers={"Accept": "application/json", **(headers or {})},
                        _request_timeout=(5, 5))


# -- framing ---------------------------------------------------------------------------------------


def test_a_content_length_body_is_read_whole(stubs: list[Stub]) -> None:
    stub = serve(stubs, lambda _: ok(b'{"kind": "List", "items": []}'))
    answer = get(client(stub.url), stub.url)
    assert (answer.status, answer.data) == (200, b'{"kind": "List", "items": []}')


def test_a_chunked_body_is_reassembled(stubs: list[Stub]) -> None:
    body = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"5;ext=1\r\n{\"a\":\r\n3\r\n 1}\r\n0\r\nX-Trailer: t\r\n\r\n")
    stub = serve(stubs, lambda _: Answer(body))
    rest = client(stub.url)
    assert get(rest, stub.url).data == b'{"a": 1}'
    assert get(rest, stub.url).data == b'{"a": 1}' and stub.accepted == 1  # the trailer was consumed


def test_a_body_without_length_ends_when_the_server_closes(stubs: list[Stub]) -> None:
    stub = serve(stubs, lambda _: Answer(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{\"whole\": true}", close=True))
    rest = client(stub.url)
    assert get(rest, stub.url).data == b'{"whole": true}'
    assert get(rest, stub.url).data == b'{"whole": true}' and stub.accepted == 2


def test_an_answer_cut_short_is_an_error_never_a_short_body(stubs: list[Stub]) -> None:
    stub = serve(stubs, lambda _: Answer(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"cut", close=True))
    with pytest.raises(ServerError), translated():
        _ = get(client(stub.url), stub.url).data


def test_a_request_body_is_sent_as_compact_json_with_its_length(stubs: list[Stub]) -> None:
    stub = serve(stubs, lambda _: ok())
    rest = client(stub.url)
    rest.request("PATCH", stub.url + "/apis/g/v1/things/a", headers={"Content-Type": "application/apply-patch+yaml"},
                 body={"metadata": {"name": "a"}})
    seen = stub.seen[-1]
    assert (seen.method, seen.target, seen.body) == ("PATCH", "/apis/g/v1/things/a", b'{"metadata":{"name":"a"}}')
    assert seen.headers["content-type"] == "application/apply-patch+yaml"
    assert seen.headers["host"] == stub.url.removeprefix("http://")


def test_a_server_path_prefix_is_kept(stubs: list[Stub]) -> None:
    """A kubeconfig server behind a path (a proxying gateway) gets every request under that path."""
    stub = serve(stubs, lambda _: ok())
    rest = client(stub.url + "/k8s/clusters/c-1")
    get(rest, stub.url + "/k8s/clusters/c-1")
    rest.request("GET", "/version")  # a bare path, as the ApiClient may pass one
    assert [s.target for s in stub.seen] == ["/k8s/clusters/c-1/api/v1/namespaces", "/k8s/clusters/c-1/version"]


# -- connections and retries -----------------------------------------------------------------------


def test_connections_are_reused(stubs: list[Stub]) -> None:
    stub = serve(stubs, lambda _: ok())
    rest = client(stub.url)
    for _ in range(5):
        assert get(rest, stub.url).data
    assert stub.accepted == 1


def test_a_connection_the_server_closed_is_replaced_for_every_method(stubs: list[Stub]) -> None:
    """An idle connection the server hung up on is noticed before use: a create is not lost to it."""
    stub = serve(stubs, lambda _: ok())
    rest = client(stub.url)
    assert get(rest, stub.url).data
    stub.hang_up_idle()
    answer = rest.request("POST", stub.url + "/api/v1/namespaces", body={"metadata": {"name": "n"}})
    assert answer.status == 200 and stub.accepted == 2


def test_an_idempotent_request_on_a_dropped_connection_is_sent_again(stubs: list[Stub]) -> None:
    """The server reads the request and hangs up without a word: a GET is sent again on a new connection."""
    answers = iter([ok(), Answer(b"", close=True), ok(b'{"second": 1}')])
    stub = serve(stubs, lambda _: next(answers))
    rest = client(stub.url)
    assert get(rest, stub.url).data
    assert get(rest, stub.url).data == b'{"second": 1}'
    assert len(stub.seen) == 3


def test_a_create_on_a_dropped_connection_is_not_sent_twice(stubs: list[Stub]) -> None:
    answers = iter([ok(), Answer(b"", close=True), ok()])
    stub = serve(stubs, lambda _: next(answers))
    rest = client(stub.url)
    assert get(rest, stub.url).data
    with pytest.raises(ServerError), translated():
        rest.request("POST", stub.url + "/api/v1/namespaces", body={})
    assert [s.method for s in stub.seen] == ["GET", "POST"]


def test_retry_after_is_honoured_for_idempotent_requests_only(stubs: list[Stub]) -> None:
    busy = Answer(b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 0\r\nContent-Length: 2\r\n\r\n{}")
    answers = iter([busy, ok(b'{"after": 1}'), busy])
    stub = serve(stubs, lambda _: next(answers))
    rest = client(stub.url)
    assert get(rest, stub.url).data == b'{"after": 1}'
    assert rest.request("POST", stub.url + "/api/v1/namespaces", body={}).status == 429
    assert len(stub.seen) == 3


def test_a_refused_connection_is_tried_four_times_then_reported(stubs: list[Stub]) -> None:
    stub = serve(stubs, lambda _: ok())
    url = stub.url
    stub.stop()
    stubs.clear()
    with pytest.raises(ConnectFailed):
        get(client(url), url)
    with pytest.raises(ServerError, match="cannot reach the API server"), translated():
        get(client(url), url)


def test_close_of_a_blocked_stream_from_another_thread_ends_it(stubs: list[Stub]) -> None:
    """A watch whose server stays silent ends as soon as another thread closes it."""
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    line = b'{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"1"}}}\n'
    stub = serve(stubs, lambda _: Answer(head + f"{len(line) - 9:x}\r\n".encode() + line[:-9] + b"\r\n"
                                         + f"{9:x}\r\n".encode() + line[-9:] + b"\r\n"))
    rest = client(stub.url)
    stream = WatchStream(rest.request("GET", stub.url + "/api/v1/secrets?watch=true", _request_timeout=(5, None)))
    assert next(stream)["object"]["metadata"]["name"] == "a"  # one line in two chunks
    closer = threading.Timer(0.2, stream.close)
    closer.start()
    assert list(stream) == []
    closer.join()


def test_a_watch_of_many_chunks_yields_every_event_and_frees_its_connection(stubs: list[Stub]) -> None:
    """Events that arrive together (one chunk each) all come out, the stream ends at the last chunk, and
    the connection carries the next request."""
    events = [b'{"type":"ADDED","object":{"metadata":{"name":"o%d"}}}\n' % i for i in range(50)]
    body = b"".join(f"{len(e):x}\r\n".encode() + e + b"\r\n" for e in events) + b"0\r\n\r\n"
    answers = iter([Answer(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + body), ok()])
    stub = serve(stubs, lambda _: next(answers))
    rest = client(stub.url)
    stream = WatchStream(rest.request("GET", stub.url + "/api/v1/secrets?watch=true", _request_timeout=(5, 5)))
    assert [e["object"]["metadata"]["name"] for e in stream] == [f"o{i}" for i in range(50)]
    assert get(rest, stub.url).status == 200 and stub.accepted == 1


# -- errors ----------------------------------------------------------------------------------------


def test_a_status_answer_is_decoded_into_our_error(stubs: list[Stub]) -> None:
    status = (b'{"kind":"Status","code":404,"reason":"NotFound","message":"secrets \\"x\\" not found",'
              b'"details":{"name":"x","kind":"secrets"}}')
    stub = serve(stubs, lambda _: Answer(b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n"
                                         + f"{len(status):x}\r\n".encode() + status + b"\r\n0\r\n\r\n"))
    answer = get(client(stub.url), stub.url)
    with pytest.raises(NotFound) as caught, translated():
        answer.read()
        raise ApiException.from_response(http_resp=answer, body=None, data=None)
    assert caught.value.details["name"] == "x" and 'secrets "x" not found' in str(caught.value)


def test_an_answer_that_is_not_a_status_is_never_quoted(stubs: list[Stub]) -> None:
    body = b'{"kind":"Secret","data":{"password":"aHVudGVyMg=="}}'
    stub = serve(stubs, lambda _: Answer(b"HTTP/1.1 500 Oops\r\nContent-Length: " + str(len(body)).encode()
                                         + b"\r\n\r\n" + body))
    answer = get(client(stub.url), stub.url)
    with pytest.raises(ApiError) as caught, translated():
        answer.read()
        raise ApiException.from_response(http_resp=answer, body=None, data=None)
    assert "aHVudGVyMg" not in str(caught.value) and "not a Status" in str(caught.value)


def test_a_token_with_a_line_break_is_refused_unsent_and_unquoted(stubs: list[Stub]) -> None:
    stub = serve(stubs, lambda _: ok())
    with pytest.raises(ServerError) as caught, translated():
        get(client(stub.url), stub.url, headers={"authorization": "Bearer s3cr3t-token\n"})
    assert "s3cr3t" not in str(caught.value) and not stub.seen


def test_each_request_carries_its_own_headers_when_their_lines_are_remembered(stubs: list[Stub]) -> None:
    """Header lines are written once per set of headers and reused: a request sends exactly its own headers (a new
    token, another content type), in order, and a bad token is refused even right after a good one was sent."""
    stub = serve(stubs, lambda _: ok())
    rest = client(stub.url)
    sets = [{"authorization": "Bearer one"}, {"authorization": "Bearer one"}, {"authorization": "Bearer two"},
            {"authorization": "Bearer one", "Content-Type": "application/merge-patch+json"},
            {"Accept-Encoding": "gzip", "authorization": "Bearer one"}]
    for headers in sets:
        get(rest, stub.url, headers=headers)
    seen = [{k.lower(): v for k, v in request.headers.items()} for request in stub.seen]
    assert [s["authorization"] for s in seen] == ["Bearer one", "Bearer one", "Bearer two", "Bearer one", "Bearer one"]
    assert [s.get("content-type") for s in seen] == [None, None, None, "application/merge-patch+json", None]
    assert [s["accept-encoding"] for s in seen] == ["identity"] * 4 + ["gzip"]
    with pytest.raises(ServerError) as caught, translated():
        get(rest, stub.url, headers={"authorization": "Bearer one\n"})
    assert "one" not in str(caught.value) and len(stub.seen) == len(sets)


# -- TLS -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA, a server certificate for the name "edge" only (not 127.0.0.1) and a client certificate."""
    openssl = shutil.which("openssl")
    assert openssl is not None, "the TLS tests make their certificates with the openssl binary"
    folder = tmp_path_factory.mktemp("pki")

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], cwd=folder, check=True, capture_output=True, timeout=60)

    key = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    run("req", "-x509", *key, "-keyout", "ca.key", "-out", "ca.crt", "-subj", "/CN=test-ca", "-days", "2")
    for name, ext in (("server", "subjectAltName=DNS:edge\nextendedKeyUsage=serverAuth\n"),
                      ("client", "extendedKeyUsage=clientAuth\n")):
        (folder / f"{name}.ext").write_text(ext)
        run("req", *key, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN=engine-{name}")
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", f"{name}.crt", "-days", "2", "-extfile", f"{name}.ext")
    return folder


def tls_stub(stubs: list[Stub], pki: Path) -> Stub:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki / "server.crt", pki / "server.key")
    context.verify_mode = ssl.CERT_OPTIONAL
    context.load_verify_locations(pki / "ca.crt")
    return serve(stubs, lambda _: ok(), tls=context)


def settings(url: str, pki: Path, **overrides: Any) -> ClientSettings:
    values: dict[str, Any] = {"server": url, "ca_data": (pki / "ca.crt").read_text(), "tls_server_name": "edge",
                              "token": "t0ken"}
    values.update(overrides)
    return ClientSettings(**values)


def test_tls_with_the_kubeconfigs_ca_and_server_name(stubs: list[Stub], pki: Path, tmp_path: Path) -> None:
    stub = tls_stub(stubs, pki)
    rest = LeanRestClient(configuration_for(settings(stub.url, pki), tmp_path))
    assert get(rest, stub.url).status == 200


def test_tls_checks_the_servers_name(stubs: list[Stub], pki: Path, tmp_path: Path) -> None:
    """Without tls-server-name the certificate (for "edge") does not match 127.0.0.1: refused."""
    stub = tls_stub(stubs, pki)
    rest = LeanRestClient(configuration_for(settings(stub.url, pki, tls_server_name=None), tmp_path))
    with pytest.raises(ServerError, match="certificate"), translated():
        get(rest, stub.url)


def test_tls_refuses_a_server_the_ca_did_not_sign(stubs: list[Stub], pki: Path, tmp_path: Path) -> None:
    stub = tls_stub(stubs, pki)
    rest = LeanRestClient(configuration_for(settings(stub.url, pki, ca_data=None), tmp_path))  # the system's CAs
    with pytest.raises(ServerError, match="certificate"), translated():
        get(rest, stub.url)


def test_insecure_skip_tls_verify_accepts_any_server(stubs: list[Stub], pki: Path, tmp_path: Path) -> None:
    stub = tls_stub(stubs, pki)
    insecure = settings(stub.url, pki, ca_data=None, tls_server_name=None, insecure=True)
    assert get(LeanRestClient(configuration_for(insecure, tmp_path)), stub.url).status == 200


def test_the_client_certificate_is_presented(stubs: list[Stub], pki: Path, tmp_path: Path) -> None:
    stub = tls_stub(stubs, pki)
    with_cert = settings(stub.url, pki, client_cert_data=(pki / "client.crt").read_bytes(),
                         client_key_data=(pki / "client.key").read_bytes())
    get(LeanRestClient(configuration_for(with_cert, tmp_path)), stub.url)
    peer: Any = stub.seen[-1].peer_cert
    assert peer["subject"] == ((("commonName", "engine-client"),),)


def test_a_trusted_kubeconfigs_ca_file_and_token_reach_the_wire(stubs: list[Stub], pki: Path) -> None:
    """The library's loader (CA written to a file, token as an api key) feeds the same client."""
    stub = tls_stub(stubs, pki)
    ca = base64.b64encode((pki / "ca.crt").read_bytes()).decode()
    kubeconfig = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
                  "clusters": [{"name": "c", "cluster": {"server": stub.url, "certificate-authority-data": ca,
                                                         "tls-server-name": "edge"}}],
                  "users": [{"name": "u", "user": {"token": "from-kubeconfig"}}],
                  "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}
    api = api_client_from_kubeconfig(kubeconfig)
    install(api, 8)
    assert isinstance(api.rest_client, LeanRestClient)
    response = api.call_api(*api.param_serialize("GET", "/version", auth_settings=["BearerToken"]),
                            _request_timeout=(5, 5))
    assert response.status == 200 and stub.seen[-1].headers["authorization"] == "Bearer from-kubeconfig"


def test_a_proxied_configuration_keeps_the_librarys_client() -> None:
    """The lean client speaks to the API server directly; a proxy (the kubeconfig's or the environment's)
    keeps the library's client, which knows CONNECT and SOCKS."""
    api = api_client_from_kubeconfig({"apiVersion": "v1", "kind": "Config", "current-context": "c",
                                      "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:1",
                                                                             "proxy-url": "http://127.0.0.1:2"}}],
                                      "users": [{"name": "u", "user": {}}],
                                      "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]})
    install(api, 8)
    assert not isinstance(api.rest_client, LeanRestClient)
    assert api.configuration.connection_pool_maxsize >= 8
