"""Worker-side SQS plumbing shared by the SQS reference target and its control: the run's queue names,
and a boto3 client whose timeouts are short and whose retries are off, so a cut network shows up as an
error within seconds, never as a hang, nor as a retry that lands after the worker gave up. Python 3.8
syntax, like the rest of `chaos.worker`; needs boto3.

The backend's URL is the endpoint's (`http://127.0.0.1:4566`, `https://sqs.eu-west-1.amazonaws.com`),
with the client's credentials as its user and password where it carries them (a local emulator's fake
ones: never the user's real credentials) and `?region=` where it names one; without them, boto3's own
chain (the standard AWS environment) decides, as for any SQS client of the user's.
"""

from __future__ import annotations

import hashlib
import os
import re
import urllib.parse
from typing import Any

import boto3
import botocore.config
import botocore.exceptions

from chaos import events

# Refused, timed out, reset (connect and read timeouts, closed connections): the request's outcome is
# unknown. A ClientError is the endpoint's answer; any other BotoCoreError (no credentials, no region, a
# bad parameter) is a mistake no retry mends.
TRANSIENT = (botocore.exceptions.ConnectionError, botocore.exceptions.HTTPClientError)
WAIT_S = 1  # a receive's long poll: how long it waits for a message before the loop looks at its stop flag
CONNECT_TIMEOUT_S = 2.0
READ_TIMEOUT_S = WAIT_S + 2.0  # longer than a long poll
DEFAULT_REGION = "us-east-1"
NAME_LIMIT = 70  # SQS allows 80 characters; the dead and done queues add a suffix
DEAD_SUFFIX = "-dead"  # the redrive policy's dead-letter queue
DONE_SUFFIX = "-done"  # the completion records: a worker's delete the endpoint accepted


def queue_for(run_id: str) -> str:
    """The run's queue: an SQS name (letters, digits, - and _), shortened with a hash where too long."""
    name = "chaos-" + re.sub(r"[^A-Za-z0-9_-]", "_", run_id)
    if len(name) > NAME_LIMIT:
        name = name[:NAME_LIMIT - 9] + "-" + hashlib.sha1(run_id.encode()).hexdigest()[:8]
    return name


def queue_names(queue: str = "") -> tuple[str, str, str]:
    """The run's three queues (by default this worker's run's): the jobs, their dead letters, the
    completion records."""
    queue = queue or os.environ[events.ENV_NAMESPACE]
    return queue, queue + DEAD_SUFFIX, queue + DONE_SUFFIX


def connect(url: str = "") -> Any:
    """An SQS client of the endpoint the URL names; by default this worker's own (a proxy under network
    faults)."""
    parts = urllib.parse.urlsplit(url or os.environ[events.ENV_BACKEND_URL])
    query = dict(urllib.parse.parse_qsl(parts.query))
    host = parts.hostname or "127.0.0.1"
    netloc = "[" + host + "]" if ":" in host else host
    endpoint = parts.scheme + "://" + netloc + (":" + str(parts.port) if parts.port else "")
    credentials: dict[str, str] = {}
    if parts.username:
        credentials = {"aws_access_key_id": urllib.parse.unquote(parts.username),
                       "aws_secret_access_key": urllib.parse.unquote(parts.password or "")}
    session = boto3.session.Session()
    region = query.get("region") or session.region_name or DEFAULT_REGION
    config = botocore.config.Config(connect_timeout=CONNECT_TIMEOUT_S, read_timeout=READ_TIMEOUT_S,
                                    retries={"total_max_attempts": 1}, region_name=region)
    return session.client("sqs", endpoint_url=endpoint, config=config, **credentials)


def queue_url(client: Any, name: str) -> str:
    """The URL of an existing queue (each request names its queue by it)."""
    return str(client.get_queue_url(QueueName=name)["QueueUrl"])


def error_code(exc: BaseException) -> str:
    """The endpoint's error code of a refused request (ReceiptHandleIsInvalid, InvalidParameterValue...)."""
    response = getattr(exc, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


__all__ = ["TRANSIENT", "WAIT_S", "connect", "error_code", "queue_for", "queue_names", "queue_url"]
