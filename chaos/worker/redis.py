"""Worker-side Redis plumbing shared by the Redis reference targets (and their control): the key layout
under the run's prefix, the queue's entry format, and a client that times out instead of hanging when
the network is cut. Python 3.8 syntax, like the rest of `chaos.worker`; needs the `redis` package."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from typing import Any

import redis

from chaos import events
from chaos.worker.settings import settled

TRANSIENT = (redis.ConnectionError, redis.TimeoutError)  # a restart (LOADING is a ConnectionError) or a cut
BLOCK_S = 0.5  # how long a blocking pop waits for a job before the loop looks at its stop flag
SOCKET_TIMEOUT_S = 3.0  # longer than BLOCK_S: a blocking pop's answer may take that long


class Keys:
    """Every key of a run starts with its prefix: the queue, each worker's processing list and heartbeat,
    the done hash (job -> the token of the claim that completed it), the dead set, and each job's failure count."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.queue = prefix + "queue"
        self.done = prefix + "done"
        self.dead = prefix + "dead"
        self.attempts = prefix + "attempts"

    def processing(self, worker: str) -> str:
        return self.prefix + "processing:" + worker

    def heartbeat(self, worker: str) -> str:
        return self.prefix + "heartbeat:" + worker

    def processing_lists(self) -> str:
        """The SCAN MATCH / KEYS pattern of every processing list of this run, whatever its prefix holds."""
        return glob_escape(self.processing("")) + "*"

    def every_key(self) -> str:
        """The pattern of every key of this run."""
        return glob_escape(self.prefix) + "*"

    def orphan(self, worker: str) -> str:
        """When a reconciler first saw this worker's heartbeat missing (its guard starts then)."""
        return self.prefix + "orphan:" + worker


def glob_escape(text: str) -> str:
    """`text` matched literally inside a Redis glob (SCAN MATCH, KEYS): a prefix holding `[v2]` would
    otherwise match `v` or `2`, never itself, and the run's own keys would be invisible to it."""
    return "".join("\\" + char if char in "\\*?[]^" else char for char in text)


def entry(job: str, payload: dict[str, Any]) -> str:
    """A queue entry: the suite's job id travels in it, beside the handler's payload."""
    return json.dumps({"id": job, "payload": payload}, sort_keys=True)


def parse(raw: str) -> tuple[str, dict[str, Any]]:
    data = json.loads(raw)
    return data["id"], data["payload"]


def keys() -> Keys:
    """This run's keys, under the prefix the control handed the worker."""
    return Keys(os.environ.get(events.ENV_NAMESPACE, ""))


def connect() -> Any:
    """A client on this worker's own endpoint (a proxy when the scenario cuts the network)."""
    return redis.Redis.from_url(os.environ[events.ENV_BACKEND_URL], decode_responses=True,
                                socket_timeout=SOCKET_TIMEOUT_S, socket_connect_timeout=SOCKET_TIMEOUT_S)




def settle(action: Callable[[], Any], stop: threading.Event) -> Any:
    """Run a completing command through a restart or a short cut; None when the server stayed away."""
    return settled(action, TRANSIENT, stop, "a Redis job")


__all__ = ["BLOCK_S", "TRANSIENT", "Keys", "connect", "entry", "glob_escape", "keys", "parse", "settle"]
