"""The key material one throwaway API server needs, made at its start: a CA, a serving certificate for
127.0.0.1 signed by it, and the service-account signing key. ECDSA P-256 keys: made in milliseconds."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

VALID_FOR = dt.timedelta(days=7)


@dataclass(frozen=True)
class Certificates:
    """Files written into one server's folder (keys mode 0600)."""

    ca: Path
    serving_cert: Path
    serving_key: Path
    service_account_key: Path
    service_account_public_key: Path


def make_certificates(folder: Path, name: str) -> Certificates:
    """Write a CA, a serving certificate for 127.0.0.1 and localhost, and a service-account key into ``folder``."""
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)  # a clock a little behind still trusts them
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{name} test CA")])
    ca_cert = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
               .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now).not_valid_after(now + VALID_FOR)
               .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                            content_commitment=False, key_encipherment=False,
                                            data_encipherment=False, key_agreement=False, encipher_only=False,
                                            decipher_only=False), critical=True)
               .sign(ca_key, hashes.SHA256()))
    serving_key = ec.generate_private_key(ec.SECP256R1())
    serving = (x509.CertificateBuilder()
               .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
               .issuer_name(ca_name).public_key(serving_key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now).not_valid_after(now + VALID_FOR)
               .add_extension(x509.SubjectAlternativeName([
                   x509.IPAddress(ipaddress.IPv4Address("127.0.0.1")), x509.DNSName("localhost"),
                   x509.DNSName("kubernetes.default.svc")]), critical=False)
               .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
               .sign(ca_key, hashes.SHA256()))
    files = Certificates(ca=folder / "ca.crt", serving_cert=folder / "serving.crt",
                         serving_key=folder / "serving.key", service_account_key=folder / "service-account.key",
                         service_account_public_key=folder / "service-account.pub")
    files.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    files.serving_cert.write_bytes(serving.public_bytes(serialization.Encoding.PEM))
    _write_key(files.serving_key, serving_key)
    signer = ec.generate_private_key(ec.SECP256R1())
    _write_key(files.service_account_key, signer)
    files.service_account_public_key.write_bytes(signer.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return files


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    path.touch(mode=0o600)
    path.write_bytes(pem)
