"""Kafka client security settings (servicekit.kafka): what each combination gives aiokafka.

Tansu (the development broker) has no TLS or SASL listener, so the TLS part is proven
against a real TLS server that requires a client certificate (mutual TLS), with a CA and
certificates made here; the SASL part by the options every client is built with.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from pydantic import ValidationError

from servicekit import kafka
from servicekit.cli import relay_for
from servicekit.settings import ServiceSettings


def settings(**values: object) -> ServiceSettings:
    return ServiceSettings(_env_file=None, **values)  # type: ignore[call-arg]


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )


def make_pki(folder: Path, name: str) -> dict[str, Path]:
    """A CA, a server certificate for 127.0.0.1/localhost and a client certificate, as PEM files."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name(f"{name} CA"))
        .issuer_name(_name(f"{name} CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    files = {"ca": folder / f"{name}-ca.pem"}
    files["ca"].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    for role, san in (("server", True), ("client", False)):
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(f"{name} {role}"))
            .issuer_name(ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=1))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
            )
        )
        if san:
            builder = builder.add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
                ),
                critical=False,
            )
        cert = builder.sign(ca_key, hashes.SHA256())
        files[f"{role}_cert"] = folder / f"{name}-{role}.pem"
        files[f"{role}_cert"].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        files[f"{role}_key"] = folder / f"{name}-{role}-key.pem"
        _write_key(files[f"{role}_key"], key)
    return files


async def handshake(server_ctx: ssl.SSLContext, client_ctx: ssl.SSLContext) -> str:
    """Connect with ``client_ctx`` to a TLS server on 127.0.0.1; returns the client cert's CN the
    server saw."""
    seen: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        cert = writer.get_extra_info("peercert") or {}
        subject = dict(x[0] for x in cert.get("subject", ()))
        if not seen.done():
            seen.set_result(subject.get("commonName", ""))
        writer.close()

    server = await asyncio.start_server(on_client, "127.0.0.1", 0, ssl=server_ctx)
    port = server.sockets[0].getsockname()[1]
    try:
        _, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port, ssl=client_ctx, server_hostname="127.0.0.1"), 10
        )
        writer.close()
        return await asyncio.wait_for(seen, 10)
    finally:
        server.close()
        await server.wait_closed()


def server_context(pki: dict[str, Path]) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(pki["ca"]))
    ctx.load_cert_chain(pki["server_cert"], pki["server_key"])
    ctx.verify_mode = ssl.CERT_REQUIRED  # mutual TLS, as a Kafka SSL listener with ssl.client.auth=required
    return ctx


class TestPlaintext:
    def test_the_default_adds_no_option(self) -> None:
        assert kafka.client_options(settings()) == {}
        assert relay_for(settings()).kafka_options == {}


class TestTls:
    async def test_mutual_tls_with_the_configured_ca_and_client_certificate(self, tmp_path: Path) -> None:
        pki = make_pki(tmp_path, "agency")
        s = settings(
            kafka_security_protocol="SSL",
            kafka_ssl_cafile=str(pki["ca"]),
            kafka_ssl_certfile=str(pki["client_cert"]),
            kafka_ssl_keyfile=str(pki["client_key"]),
        )
        options = kafka.client_options(s)
        assert sorted(options) == ["security_protocol", "ssl_context"]
        assert options["security_protocol"] == "SSL"
        ctx = options["ssl_context"]
        assert (ctx.verify_mode, ctx.check_hostname) == (ssl.CERT_REQUIRED, True)
        assert await handshake(server_context(pki), ctx) == "agency client"

    async def test_a_broker_signed_by_another_ca_is_refused(self, tmp_path: Path) -> None:
        ours, theirs = make_pki(tmp_path, "agency"), make_pki(tmp_path, "impostor")
        s = settings(kafka_security_protocol="SSL", kafka_ssl_cafile=str(ours["ca"]))
        with pytest.raises(ssl.SSLCertVerificationError):
            await handshake(server_context(theirs), kafka.client_options(s)["ssl_context"])

    def test_a_certificate_without_its_key_is_refused(self, tmp_path: Path) -> None:
        pki = make_pki(tmp_path, "agency")
        with pytest.raises(ValidationError, match="a client certificate needs its key"):
            settings(kafka_security_protocol="SSL", kafka_ssl_certfile=str(pki["client_cert"]))

    def test_tls_files_with_a_plaintext_protocol_are_refused(self, tmp_path: Path) -> None:
        with pytest.raises(ValidationError, match="TLS files given but kafka_security_protocol is PLAINTEXT"):
            settings(kafka_ssl_cafile=str(tmp_path / "ca.pem"))


class TestSasl:
    def test_scram_over_tls(self, tmp_path: Path) -> None:
        pki = make_pki(tmp_path, "agency")
        s = settings(
            kafka_security_protocol="SASL_SSL",
            kafka_sasl_mechanism="SCRAM-SHA-512",
            kafka_sasl_username="filing",
            kafka_sasl_password="s3cret",
            kafka_ssl_cafile=str(pki["ca"]),
        )
        options = kafka.client_options(s)
        assert {k: v for k, v in options.items() if k != "ssl_context"} == {
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_plain_username": "filing",
            "sasl_plain_password": "s3cret",
        }
        assert isinstance(options["ssl_context"], ssl.SSLContext)
        relay = relay_for(s)  # the relay's producer and probes connect the same way
        assert relay.kafka_options["sasl_plain_username"] == "filing"
        assert relay.kafka_options["security_protocol"] == "SASL_SSL"

    def test_settings_come_from_the_environment(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("ROOMTAX_KAFKA_SECURITY_PROTOCOL", "SASL_PLAINTEXT")
        monkeypatch.setenv("ROOMTAX_KAFKA_SASL_MECHANISM", "SCRAM-SHA-256")
        monkeypatch.setenv("ROOMTAX_KAFKA_SASL_USERNAME", "assessment")
        monkeypatch.setenv("ROOMTAX_KAFKA_SASL_PASSWORD", "pw")
        assert kafka.client_options(settings()) == {
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "SCRAM-SHA-256",
            "sasl_plain_username": "assessment",
            "sasl_plain_password": "pw",
        }

    async def test_oauthbearer_reads_the_token_file_at_each_authentication(self, tmp_path: Path) -> None:
        token = tmp_path / "token"
        token.write_text("first-token\n")
        s = settings(
            kafka_security_protocol="SASL_SSL",
            kafka_sasl_mechanism="OAUTHBEARER",
            kafka_sasl_oauth_token_file=str(token),
        )
        provider = kafka.client_options(s)["sasl_oauth_token_provider"]
        assert await provider.token() == "first-token"
        token.write_text("rotated-token")
        assert await provider.token() == "rotated-token"

    @pytest.mark.parametrize(
        ("values", "message"),
        [
            ({"kafka_security_protocol": "SASL_SSL"}, "kafka_sasl_mechanism: required with SASL_SSL"),
            (
                {"kafka_security_protocol": "SASL_SSL", "kafka_sasl_mechanism": "PLAIN"},
                "kafka_sasl_username, kafka_sasl_password: required with PLAIN",
            ),
            (
                {"kafka_security_protocol": "SASL_SSL", "kafka_sasl_mechanism": "OAUTHBEARER"},
                "kafka_sasl_oauth_token_file: required with OAUTHBEARER",
            ),
            ({"kafka_sasl_mechanism": "PLAIN"}, "PLAIN needs SASL_PLAINTEXT or SASL_SSL, not PLAINTEXT"),
            (
                {
                    "environment": "production",
                    "jwt_public_key": "not-the-dev-key",
                    "kafka_security_protocol": "SASL_PLAINTEXT",
                    "kafka_sasl_mechanism": "PLAIN",
                    "kafka_sasl_username": "u",
                    "kafka_sasl_password": "p",
                },
                "PLAIN over SASL_PLAINTEXT sends the password in clear",
            ),
        ],
    )
    def test_inconsistent_settings_are_refused(self, values: dict[str, str], message: str) -> None:
        with pytest.raises(ValidationError, match=message):
            settings(**values)
