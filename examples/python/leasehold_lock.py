#!/usr/bin/env python3
"""Locks of a leasehold service from Python, on the wire contract alone.

A small client over nats-py (no leasehold code): ``lock.acquire``, ``lock.renew``,
``lock.release`` and ``lock.get`` as NATS requests to ``<prefix>.v1.lock.<op>``,
every contract error raised as a typed exception (``ForbiddenError``,
``UnauthenticatedError``, ``NotHeldError``, ...), and a command line over it::

    LEASEHOLD_USER=alice LEASEHOLD_PASSWORD=... \\
      python3 examples/python/leasehold_lock.py --nats nats://127.0.0.1:4222 acquire reports --owner worker-a

The client never says who it is: on the account layout the NATS server tells
the service (docs/python.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import uuid
from typing import Any, Dict, Optional

import nats
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

ERROR_STATUS_HEADER = "Nats-Service-Error-Code"
ERROR_MESSAGE_HEADER = "Nats-Service-Error"
# A reply larger than this is not the service's (its bodies are small); refusing it bounds memory.
MAX_REPLY_BYTES = 1 << 20


class LeaseholdError(Exception):
    """The service answered and refused; ``code`` says why, ``details`` carries the code's fields."""

    def __init__(self, code: str, status: int, message: str, details: Dict[str, Any]) -> None:
        super().__init__(f"{code} ({status}): {message}")
        self.code = code
        self.status = status
        self.message = message
        self.details = details


class BadRequestError(LeaseholdError):
    """BAD_REQUEST (400): a missing, ill-typed or unknown field, or a limit passed."""


class TtlExceedsMaxError(LeaseholdError):
    """TTL_EXCEEDS_MAX (400): a TTL above the service's ceiling; details ``ttlMs``, ``maxTtlMs``."""


class UnauthenticatedError(LeaseholdError):
    """UNAUTHENTICATED (401): the service requires a principal and NATS named none for this connection."""


class ForbiddenError(LeaseholdError):
    """FORBIDDEN (403): another principal holds the lease, or an operator op; ``principal`` is the requester's."""

    @property
    def principal(self) -> str:
        return str(self.details.get("principal", ""))


class UnknownLeaseError(LeaseholdError):
    """UNKNOWN_LEASE (404): a proxy lease id that does not resolve."""


class UnknownProxyError(LeaseholdError):
    """UNKNOWN_PROXY (404): a proxy that is not registered; details ``proxies``."""


class UnknownHostError(LeaseholdError):
    """UNKNOWN_HOST (404): a pin to a host the route has never seen."""


class NoSessionError(LeaseholdError):
    """NO_SESSION (404): the session named is closed, expired or unknown."""


class NoMatchError(LeaseholdError):
    """NO_MATCH (409): no proxy could take a lease; details ``stats``."""


class LeaseExistsError(LeaseholdError):
    """LEASE_EXISTS (409): the lock is held; details ``owner``, ``expiresAt``."""


class NotHeldError(LeaseholdError):
    """NOT_HELD (409): the etag (or owner) is not the current lease's."""


class AlreadyReleasedError(LeaseholdError):
    """ALREADY_RELEASED (410): the lock was released, reset or never acquired."""


class RequestIdReusedError(LeaseholdError):
    """REQUEST_ID_REUSED (422): the requestId was used for another request."""


class TooManyWaitersError(LeaseholdError):
    """TOO_MANY_WAITERS (429): the lock's wait queue is full."""


class CorruptError(LeaseholdError):
    """CORRUPT (500): the lock's history breaks its invariants; an operator's lock.reset frees it."""


class NoHostError(LeaseholdError):
    """NO_HOST (503): no healthy, non-draining candidate host."""


class PinnedDownError(LeaseholdError):
    """PINNED_DOWN (503): the route is pinned to an unhealthy host."""


class UnavailableError(LeaseholdError):
    """UNAVAILABLE (503): the event stream could not be written in time; nothing changed, try again."""


# Every code of the contract (the lock ops answer a few of them; the rest are for other kinds' ops).
ERROR_CLASSES = {
    "UNAUTHENTICATED": UnauthenticatedError,
    "BAD_REQUEST": BadRequestError,
    "REQUEST_ID_REUSED": RequestIdReusedError,
    "TTL_EXCEEDS_MAX": TtlExceedsMaxError,
    "FORBIDDEN": ForbiddenError,
    "CORRUPT": CorruptError,
    "UNKNOWN_LEASE": UnknownLeaseError,
    "UNKNOWN_PROXY": UnknownProxyError,
    "UNKNOWN_HOST": UnknownHostError,
    "NO_SESSION": NoSessionError,
    "NO_MATCH": NoMatchError,
    "LEASE_EXISTS": LeaseExistsError,
    "NOT_HELD": NotHeldError,
    "ALREADY_RELEASED": AlreadyReleasedError,
    "NO_HOST": NoHostError,
    "PINNED_DOWN": PinnedDownError,
    "TOO_MANY_WAITERS": TooManyWaitersError,
    "UNAVAILABLE": UnavailableError,
}


class NoAnswerError(Exception):
    """No answer in time, or nobody serving the subject: whether the request took effect is unknown.

    Send it again with the same ``request_id`` to learn its outcome (the service answers a
    repeated request as it answered the first).
    """

    def __init__(self, subject: str, request_id: str, reason: str) -> None:
        super().__init__(f"no answer on {subject} ({reason}); requestId {request_id}")
        self.subject = subject
        self.request_id = request_id


def error_from_reply(status: int, header_message: Optional[str], body: Any) -> LeaseholdError:
    """The typed exception a failure reply describes (unknown codes as the base class)."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        error = {}
    code = error.get("code") if isinstance(error.get("code"), str) else "UNKNOWN"
    message = error.get("message") if isinstance(error.get("message"), str) else (header_message or f"service error {status}")
    details = {k: v for k, v in error.items() if k not in ("code", "message")}
    return ERROR_CLASSES.get(code, LeaseholdError)(code, status, message, details)


class LockClient:
    """The lock ops of one leasehold service on a nats-py connection."""

    def __init__(self, nc: Any, prefix: str = "leasehold", timeout: float = 5.0) -> None:
        self.nc = nc
        self.prefix = prefix
        self.timeout = timeout

    async def request(self, op: str, body: Dict[str, Any], extra_wait: float = 0.0) -> Dict[str, Any]:
        """Sends ``body`` to ``<prefix>.v1.lock.<op>``; the reply body, or a typed exception."""
        body = dict(body)
        body.setdefault("requestId", uuid.uuid4().hex)
        subject = f"{self.prefix}.v1.lock.{op}"
        try:
            msg = await self.nc.request(subject, json.dumps(body).encode(), timeout=self.timeout + extra_wait)
        except NoRespondersError:
            raise NoAnswerError(subject, body["requestId"], "no service listens") from None
        except NatsTimeoutError:
            raise NoAnswerError(subject, body["requestId"], f"timed out after {self.timeout + extra_wait:.1f} s") from None
        if len(msg.data) > MAX_REPLY_BYTES:
            raise LeaseholdError("MALFORMED_REPLY", 502, f"reply of {len(msg.data)} bytes", {})
        try:
            reply = json.loads(msg.data) if msg.data else {}
        except ValueError as e:
            raise LeaseholdError("MALFORMED_REPLY", 502, f"reply is not JSON: {e}", {}) from None
        headers = msg.headers or {}
        status = headers.get(ERROR_STATUS_HEADER)
        if status:
            try:
                code = int(status)
            except ValueError:
                code = 502
            raise error_from_reply(code, headers.get(ERROR_MESSAGE_HEADER), reply)
        if not isinstance(reply, dict):
            raise LeaseholdError("MALFORMED_REPLY", 502, "reply is not a JSON object", {})
        return reply

    async def acquire(
        self, name: str, owner: str, ttl_ms: Optional[int] = None, wait_ms: Optional[int] = None, request_id: Optional[str] = None
    ) -> Dict[str, Any]:
        """The lease (``name``, ``owner``, ``generation``, ``etag``, ``expiresAt``, ``ttlMs``)."""
        body: Dict[str, Any] = {"name": name, "owner": owner, "requestId": request_id or uuid.uuid4().hex}
        if ttl_ms is not None:
            body["ttlMs"] = ttl_ms
        if wait_ms is not None:
            body["waitMs"] = wait_ms
        # A waiting acquire is answered up to waitMs later: the deadline grows by as much.
        return (await self.request("acquire", body, extra_wait=(wait_ms or 0) / 1000))["lease"]

    async def renew(
        self, name: str, owner: str, etag: str, ttl_ms: Optional[int] = None, request_id: Optional[str] = None
    ) -> Dict[str, Any]:
        """The renewed lease (a new etag, the same generation)."""
        body: Dict[str, Any] = {"name": name, "owner": owner, "etag": etag, "requestId": request_id or uuid.uuid4().hex}
        if ttl_ms is not None:
            body["ttlMs"] = ttl_ms
        return (await self.request("renew", body))["lease"]

    async def release(self, name: str, etag: str, request_id: Optional[str] = None) -> None:
        """Frees the lock."""
        await self.request("release", {"name": name, "etag": etag, "requestId": request_id or uuid.uuid4().hex})

    async def get(self, name: str) -> Optional[Dict[str, Any]]:
        """The live lease, or None when the lock is free."""
        return (await self.request("get", {"name": name}))["lease"]


async def main(argv: list) -> int:
    parser = argparse.ArgumentParser(description="leasehold locks from Python (password from LEASEHOLD_PASSWORD)")
    parser.add_argument("--nats", default=os.environ.get("LEASEHOLD_NATS", "nats://127.0.0.1:4222"))
    parser.add_argument("--prefix", default=os.environ.get("LEASEHOLD_PREFIX", "leasehold"))
    parser.add_argument("--user", default=os.environ.get("LEASEHOLD_USER"))
    parser.add_argument("--inbox-prefix", help="where replies come (default _INBOX_<user>, as nats-config allows)")
    parser.add_argument("--timeout-ms", type=int, default=5000)
    ops = parser.add_subparsers(dest="op", required=True)
    acquire = ops.add_parser("acquire")
    acquire.add_argument("name")
    acquire.add_argument("--owner", required=True)
    acquire.add_argument("--ttl-ms", type=int)
    acquire.add_argument("--wait-ms", type=int)
    renew = ops.add_parser("renew")
    renew.add_argument("name")
    renew.add_argument("--owner", required=True)
    renew.add_argument("--etag", required=True)
    renew.add_argument("--ttl-ms", type=int)
    release = ops.add_parser("release")
    release.add_argument("name")
    release.add_argument("--etag", required=True)
    get = ops.add_parser("get")
    get.add_argument("name")
    args = parser.parse_args(argv)

    credentials: Dict[str, Any] = {}
    if args.user:
        # The password only from the environment: a flag would show in ps.
        credentials = {"user": args.user, "password": os.environ.get("LEASEHOLD_PASSWORD", "")}
    inbox_prefix = args.inbox_prefix or (f"_INBOX_{args.user}" if args.user else "_INBOX")
    async def report(e: Exception) -> None:
        # nats-py's default logs a traceback per error; one line says it (a refused inbox, a lost server).
        print(f"nats: {type(e).__name__}: {e}", file=sys.stderr)
        if "permissions violation for subscription" in str(e).lower():
            print(f"  (a user of leasehold nats-config receives replies only under _INBOX_<user>: --inbox-prefix _INBOX_{args.user or '<user>'})", file=sys.stderr)

    try:
        # Bounded: nats-py retries a refused connection without end unless told a number of attempts.
        nc = await asyncio.wait_for(
            nats.connect(
                args.nats,
                name="leasehold-python",
                inbox_prefix=inbox_prefix,
                connect_timeout=args.timeout_ms / 1000,
                allow_reconnect=False,
                max_reconnect_attempts=1,
                reconnect_time_wait=0.1,
                error_cb=report,
                **credentials,
            ),
            timeout=args.timeout_ms / 1000,
        )
    except Exception as e:  # nats-py raises its own errors, OSError and asyncio's timeout alike: each is "cannot connect"
        print(f"cannot connect to {args.nats}: {type(e).__name__}: {e}", file=sys.stderr)
        return 3
    try:
        locks = LockClient(nc, args.prefix, args.timeout_ms / 1000)
        if args.op == "acquire":
            result: Any = {"lease": await locks.acquire(args.name, args.owner, args.ttl_ms, args.wait_ms)}
        elif args.op == "renew":
            result = {"lease": await locks.renew(args.name, args.owner, args.etag, args.ttl_ms)}
        elif args.op == "release":
            await locks.release(args.name, args.etag)
            result = {}
        else:
            result = {"lease": await locks.get(args.name)}
        print(json.dumps(result))
        return 0
    except LeaseholdError as e:
        print(f"{type(e).__name__}: {e} {json.dumps(e.details)}", file=sys.stderr)
        return 1
    except NoAnswerError as e:
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return 3
    finally:
        await nc.close()


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
