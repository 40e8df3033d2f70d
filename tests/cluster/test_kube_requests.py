"""The API verb of a request, as the request metrics label it."""

from __future__ import annotations

import pytest

from engine.cluster.kube.requests import api_verb


@pytest.mark.parametrize(("method", "url", "verb"), [
    ("GET", "https://h/api/v1/namespaces", "LIST"),
    ("GET", "https://h/api/v1/namespaces/tenant-a", "GET"),
    ("GET", "https://h/api/v1/namespaces/tenant-a/secrets", "LIST"),
    ("GET", "https://h/api/v1/namespaces/tenant-a/secrets/x", "GET"),
    ("GET", "https://h/api/v1/namespaces/tenant-a/secrets?watch=true&resourceVersion=3", "WATCH"),
    ("GET", "https://h/apis/c5c3.io/v1alpha1/keystoneusers?labelSelector=a", "LIST"),
    ("GET", "https://h/apis/c5c3.io/v1alpha1/namespaces/t/keystoneusers/u/status", "GET"),
    ("GET", "https://h/apis/c5c3.io/v1alpha1", "GET"),
    ("GET", "https://h/version", "GET"),
    ("patch", "https://h/apis/c5c3.io/v1alpha1/namespaces/t/keystoneusers/u", "PATCH"),
])
def test_gets_split_into_get_list_and_watch(method: str, url: str, verb: str) -> None:
    assert api_verb(method, url) == verb
