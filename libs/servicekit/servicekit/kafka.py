"""How every Kafka client of a service connects: plaintext, TLS, SASL (PLAIN, SCRAM, OAUTHBEARER).

:func:`client_options` turns the ``ROOMTAX_KAFKA_*`` settings into the keyword arguments
aiokafka's producer, consumers, admin client and bare client all take; the outbox relay, the
event consumers, their probes and the broker health check are built with them
(:func:`servicekit.cli.relay_for`, :func:`servicekit.cli.run_workers`,
:func:`servicekit.app.broker_reachable`), and :func:`admin_client` gives an operator's script
the same connection.

Settings (each may also carry the service's prefix, e.g. ``FILING_KAFKA_SASL_USERNAME``):

=================================  ===========================================================
``ROOMTAX_KAFKA_SECURITY_PROTOCOL``  ``PLAINTEXT`` (default), ``SSL``, ``SASL_PLAINTEXT``, ``SASL_SSL``
``ROOMTAX_KAFKA_SSL_CAFILE``         PEM bundle of the CAs that sign the brokers' certificates
                                     (default: the system's trust store)
``ROOMTAX_KAFKA_SSL_CERTFILE``       client certificate (PEM) for mutual TLS, with
``ROOMTAX_KAFKA_SSL_KEYFILE``        its private key, and ``ROOMTAX_KAFKA_SSL_KEY_PASSWORD`` if encrypted
``ROOMTAX_KAFKA_SASL_MECHANISM``     ``PLAIN``, ``SCRAM-SHA-256``, ``SCRAM-SHA-512`` or ``OAUTHBEARER``
``ROOMTAX_KAFKA_SASL_USERNAME``      PLAIN / SCRAM user, with ``ROOMTAX_KAFKA_SASL_PASSWORD``
``ROOMTAX_KAFKA_SASL_OAUTH_TOKEN_FILE``  OAUTHBEARER: a file holding the current access token,
                                     re-read at every authentication (a sidecar or the
                                     platform's token projection keeps it fresh)
=================================  ===========================================================

Production refuses a password sent in clear (``SASL_PLAINTEXT`` with ``PLAIN``) and a client
certificate without its key (:func:`check`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiokafka.abc import AbstractTokenProvider
from aiokafka.helpers import create_ssl_context

if TYPE_CHECKING:
    from aiokafka.admin import AIOKafkaAdminClient

    from servicekit.settings import ServiceSettings

TLS_PROTOCOLS = ("SSL", "SASL_SSL")
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")


class FileTokenProvider(AbstractTokenProvider):  # type: ignore[misc]
    """OAUTHBEARER: the token in ``path``, read again at every (re-)authentication."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)

    async def token(self) -> str:
        return self.path.read_text().strip()


def check(settings: ServiceSettings) -> list[str]:
    """What is wrong with the Kafka security settings (empty when they are consistent)."""
    problems: list[str] = []
    protocol, mechanism = settings.kafka_security_protocol, settings.kafka_sasl_mechanism
    if protocol in SASL_PROTOCOLS:
        if mechanism is None:
            problems.append(f"kafka_sasl_mechanism: required with {protocol}")
        elif mechanism == "OAUTHBEARER":
            if not settings.kafka_sasl_oauth_token_file:
                problems.append("kafka_sasl_oauth_token_file: required with OAUTHBEARER")
        elif not (settings.kafka_sasl_username and settings.kafka_sasl_password):
            problems.append(f"kafka_sasl_username, kafka_sasl_password: required with {mechanism}")
        if settings.environment == "production" and protocol == "SASL_PLAINTEXT" and mechanism == "PLAIN":
            problems.append("kafka_security_protocol: PLAIN over SASL_PLAINTEXT sends the password in clear")
    elif mechanism is not None:
        problems.append(f"kafka_sasl_mechanism: {mechanism} needs SASL_PLAINTEXT or SASL_SSL, not {protocol}")
    if protocol not in TLS_PROTOCOLS and (settings.kafka_ssl_cafile or settings.kafka_ssl_certfile):
        problems.append(f"kafka_ssl_*: TLS files given but kafka_security_protocol is {protocol}")
    if bool(settings.kafka_ssl_certfile) != bool(settings.kafka_ssl_keyfile):
        problems.append("kafka_ssl_certfile, kafka_ssl_keyfile: a client certificate needs its key")
    return problems


def client_options(settings: ServiceSettings) -> dict[str, Any]:
    """The connection keyword arguments of every aiokafka client of the service."""
    protocol = settings.kafka_security_protocol
    options: dict[str, Any] = {}
    if protocol == "PLAINTEXT":
        return options
    options["security_protocol"] = protocol
    if protocol in TLS_PROTOCOLS:
        options["ssl_context"] = create_ssl_context(
            cafile=settings.kafka_ssl_cafile,
            certfile=settings.kafka_ssl_certfile,
            keyfile=settings.kafka_ssl_keyfile,
            password=settings.kafka_ssl_key_password,
        )
    if protocol in SASL_PROTOCOLS:
        mechanism = settings.kafka_sasl_mechanism
        options["sasl_mechanism"] = mechanism
        if mechanism == "OAUTHBEARER":
            assert settings.kafka_sasl_oauth_token_file is not None  # check() at settings load
            options["sasl_oauth_token_provider"] = FileTokenProvider(settings.kafka_sasl_oauth_token_file)
        else:
            options["sasl_plain_username"] = settings.kafka_sasl_username
            options["sasl_plain_password"] = settings.kafka_sasl_password
    return options


def admin_client(settings: ServiceSettings, **kwargs: Any) -> AIOKafkaAdminClient:
    """An admin client (topics, groups) connected like the service's other clients."""
    from aiokafka.admin import AIOKafkaAdminClient

    return AIOKafkaAdminClient(
        bootstrap_servers=settings.kafka_bootstrap, **client_options(settings), **kwargs
    )


async def stop_quietly(client: Any) -> None:
    """Stop an aiokafka client, whatever state its connection is in, without ending the
    task that stops it.

    With the broker gone, a consumer's ``stop()`` cancels its fetch tasks and awaits them,
    and their ``CancelledError`` comes out of ``stop()``: the cancellation is theirs, not
    the caller's. Letting it through ended the consumer's reconnect loop at the first broker
    outage (its task "cancelled", the worker's heartbeat stopped). It is re-raised only
    when the calling task itself is being cancelled."""
    try:
        await client.stop()
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
    except Exception:  # noqa: BLE001 - a client that cannot stop cleanly is dropped anyway
        return
