"""A generic webhook platform: messages arrive as signed POSTs, answers leave as signed POSTs to
a configured URL.

Both directions carry ``X-Hermes-Signature: sha256=<hex>``, the HMAC-SHA256 of the raw body with
the shared secret. An inbound request without a valid signature gets a 401 and nothing runs.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hermes_hookspecs import HermesError

from .core import GatewayClosed
from .listening import listen
from .platforms import Attachment, Gateway, InboundMessage, PlatformAdapter

if TYPE_CHECKING:
    import aiohttp
    from aiohttp import web

SECRET_ENV = "HERMES_WEBHOOK_SECRET"
SIGNATURE_HEADER = "X-Hermes-Signature"
DEFAULT_PORT = 8643


def sign(secret: str, body: bytes) -> str:
    """The signature header value of ``body``: ``sha256=<hex HMAC-SHA256>``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def signature_ok(secret: str, body: bytes, header: str | None) -> bool:
    """Whether ``header`` is the signature of ``body`` (compared in constant time)."""
    if not secret or not header:
        return False
    return hmac.compare_digest(sign(secret, body).encode(), header.strip().encode())


def _text(value: Any, name: str, required: bool = True) -> str:
    if value is None and not required:
        return ""
    if isinstance(value, bool) or not isinstance(value, str | int) or (required and value == ""):
        raise ValueError(f"{name} must be a string")
    return str(value)


def parse_message(platform: str, body: Any) -> InboundMessage:
    """The :class:`InboundMessage` of an inbound JSON body; ``ValueError`` says what is wrong."""
    if not isinstance(body, Mapping):
        raise ValueError("the body must be a JSON object")
    attachments = []
    for item in body.get("attachments") or []:
        if not isinstance(item, Mapping) or not isinstance(item.get("kind"), str):
            raise ValueError("every attachment needs a kind")
        attachments.append(
            Attachment(
                kind=item["kind"],
                url=item.get("url"),
                mime_type=item.get("mime_type"),
                name=item.get("name"),
            )
        )
    text = _text(body.get("text"), "text", required=False)
    if not text and not attachments:
        raise ValueError("a message needs text or attachments")
    reply_to = body.get("reply_to")
    return InboundMessage(
        platform=platform,
        chat_id=_text(body.get("chat_id"), "chat_id"),
        user_id=_text(body.get("user_id"), "user_id"),
        text=text,
        message_id=_text(body.get("message_id"), "message_id", required=False) or uuid.uuid4().hex,
        reply_to=_text(reply_to, "reply_to") if reply_to is not None else None,
        attachments=tuple(attachments),
        user_name=_text(body.get("user_name"), "user_name", required=False) or None,
    )


class WebhookAdapter(PlatformAdapter):
    """The ``webhook`` adapter. Settings: ``host`` (127.0.0.1), ``port`` (8643; 0 picks a free
    one), ``path`` (``/webhook``), ``secret`` or the variable named by ``secret_env``
    (``HERMES_WEBHOOK_SECRET``), ``deliver_url`` (where answers are POSTed), ``timeout`` (10 s),
    ``typing`` (also POST typing events; false)."""

    can_edit = True

    def __init__(self, platform: str, settings: Mapping[str, Any]) -> None:
        self.platform = platform
        self.host = str(settings.get("host", "127.0.0.1"))
        self.port = int(settings.get("port", DEFAULT_PORT))
        self.path = str(settings.get("path") or "/webhook")
        self.secret_env = str(settings.get("secret_env") or SECRET_ENV)
        self._secret = str(settings.get("secret") or os.environ.get(self.secret_env) or "")
        self.deliver_url = str(settings.get("deliver_url") or "")
        self.timeout = float(settings.get("timeout", 10))
        self.send_typing = bool(settings.get("typing", False))
        self._gateway: Gateway | None = None
        self._runner: web.AppRunner | None = None
        self._client: aiohttp.ClientSession | None = None

    @property
    def url(self) -> str:
        """Where inbound messages are POSTed."""
        return f"http://{self.host}:{self.port}{self.path}"

    async def connect(self, gateway: Gateway) -> None:
        """Listen for signed POSTs; refuse to start without a secret or a delivery URL."""
        where = f"gateway.platforms.{self.platform}"
        if not self._secret:
            raise HermesError(
                f"the webhook ({self.platform}) needs a secret: set {self.secret_env} or "
                f"{where}.secret"
            )
        if not self.deliver_url.startswith(("http://", "https://")):
            raise HermesError(
                f"the webhook ({self.platform}) needs {where}.deliver_url, an http(s) URL "
                "that receives the answers"
            )
        import aiohttp
        from aiohttp import web

        self._gateway = gateway
        self._client = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout))
        app = web.Application(client_max_size=4 * 1024 * 1024)
        app.router.add_post(self.path, self._inbound)
        try:
            self._runner, self.port = await listen(app, self.host, self.port, "the webhook")
        except HermesError:
            await self.disconnect()  # the outbound client too
            raise

    async def disconnect(self) -> None:
        """Stop listening and close the outbound client."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def _inbound(self, request: web.Request) -> web.Response:
        from aiohttp import web

        body = await request.read()
        if not signature_ok(self._secret, body, request.headers.get(SIGNATURE_HEADER)):
            return web.json_response({"error": "missing or wrong signature"}, status=401)
        try:
            message = parse_message(self.platform, json.loads(body))
        except ValueError as exc:  # JSON errors are ValueErrors too
            return web.json_response({"error": str(exc)}, status=400)
        assert self._gateway is not None
        try:
            await self._gateway.dispatch(message)
        except PermissionError as exc:
            return web.json_response({"error": str(exc)}, status=403)
        except GatewayClosed as exc:
            return web.json_response({"error": str(exc)}, status=503)
        return web.json_response({"accepted": True, "message_id": message.message_id}, status=202)

    async def _post(self, event: dict[str, Any]) -> None:
        if self._client is None:
            raise HermesError(f"the webhook ({self.platform}) is not connected")
        body = json.dumps({"platform": self.platform, **event}, ensure_ascii=False).encode()
        headers = {"Content-Type": "application/json", SIGNATURE_HEADER: sign(self._secret, body)}
        try:
            async with self._client.post(self.deliver_url, data=body, headers=headers) as answer:
                if answer.status >= 300:
                    raise HermesError(
                        f"webhook delivery to {self.deliver_url} failed: HTTP {answer.status}"
                    )
        except (OSError, TimeoutError) as exc:
            raise HermesError(f"webhook delivery to {self.deliver_url} failed: {exc}") from None
        except Exception as exc:
            if isinstance(exc, HermesError):
                raise
            raise HermesError(
                f"webhook delivery to {self.deliver_url} failed: {type(exc).__name__}: {exc}"
            ) from None

    async def send(self, chat_id: str, text: str, *, reply_to: str | None = None) -> str:
        """POST a ``message`` event; return its new message id."""
        message_id = uuid.uuid4().hex
        await self._post(
            {
                "type": "message",
                "chat_id": chat_id,
                "message_id": message_id,
                "reply_to": reply_to,
                "text": text,
            }
        )
        return message_id

    async def edit(self, chat_id: str, message_id: str, text: str) -> None:
        """POST an ``edit`` event replacing the text of ``message_id``."""
        await self._post(
            {"type": "edit", "chat_id": chat_id, "message_id": message_id, "text": text}
        )

    async def typing(self, chat_id: str) -> None:
        """POST a ``typing`` event, when ``typing: true``."""
        if self.send_typing:
            await self._post({"type": "typing", "chat_id": chat_id})


def create(platform: str, settings: Mapping[str, Any]) -> WebhookAdapter:
    """The registered factory of the ``webhook`` adapter."""
    return WebhookAdapter(platform, settings)
