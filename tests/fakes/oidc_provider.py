"""A local OpenID Connect provider for the console's sign-in tests (aiohttp, on 127.0.0.1).

It speaks the parts of the protocol a relying party uses, as Slack's and Entra's do: the
discovery document, `/authorize` (signs the configured `user` in at once and redirects back
with a code, or with `error=access_denied` when `deny` is set), `/token` (checks the client's
secret, the code, the redirect URI and the PKCE verifier against the S256 challenge; returns an
RS256-signed ID token) and `/jwks` (the public key). `tamper` makes the ID token wrong in one
way, to show each is refused; `authorize_requests` and `token_requests` record what came in."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from functools import lru_cache
from typing import Any
from urllib.parse import urlencode

import jwt
from aiohttp import web
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

TAMPERS = ("wrong_key", "wrong_audience", "wrong_issuer", "wrong_nonce", "expired", "hs256", "none", "unknown_kid")


@lru_cache(maxsize=2)
def signing_key(which: int) -> rsa.RSAPrivateKey:
    """RSA keys made once per test session (a 2048-bit key takes a moment)."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class FakeOidcProvider:
    def __init__(self, client_id: str = "askdesk-console", client_secret: str = "console-secret") -> None:
        self.client_id = client_id
        self.client_secret = client_secret
        self.key = signing_key(0)
        self.other_key = signing_key(1)  # signs the "wrong_key" tokens: not in the JWKS
        self.kid = "key-1"
        self.user: dict[str, Any] = {"sub": "U0ADMIN", "email": "dana@example.org", "email_verified": True,
                                     "name": "Dana Admin"}
        self.tamper: str | None = None
        self.deny = False
        self.codes: dict[str, dict[str, str]] = {}
        self.authorize_requests: list[dict[str, str]] = []
        self.token_requests: list[dict[str, str]] = []
        self.port = 0
        self._runner: web.AppRunner | None = None

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> "FakeOidcProvider":
        app = web.Application()
        app.router.add_get("/.well-known/openid-configuration", self.discovery)
        app.router.add_get("/authorize", self.authorize)
        app.router.add_post("/token", self.token)
        app.router.add_get("/jwks", self.jwks)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def discovery(self, request: web.Request) -> web.Response:
        return web.json_response({
            "issuer": self.issuer, "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token", "jwks_uri": f"{self.issuer}/jwks",
            "response_types_supported": ["code"], "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"], "scopes_supported": ["openid", "email", "profile"],
            "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
            "code_challenge_methods_supported": ["S256"]})

    async def authorize(self, request: web.Request) -> web.Response:
        query = dict(request.query)
        self.authorize_requests.append(query)
        if query.get("client_id") != self.client_id or query.get("response_type") != "code" \
                or query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            return web.Response(status=400, text="bad authorization request")
        back = {"state": query.get("state", "")}
        if self.deny:
            back["error"] = "access_denied"
        else:
            code = secrets.token_urlsafe(16)
            self.codes[code] = {"redirect_uri": query["redirect_uri"], "challenge": query["code_challenge"],
                                "nonce": query.get("nonce", "")}
            back["code"] = code
        return web.Response(status=302, headers={"Location": f"{query['redirect_uri']}?{urlencode(back)}"})

    async def token(self, request: web.Request) -> web.Response:
        form = dict(await request.post())
        self.token_requests.append({k: str(v) for k, v in form.items()})
        secret = form.get("client_secret")
        if secret is None and request.headers.get("Authorization", "").startswith("Basic "):
            user, _, secret = base64.b64decode(request.headers["Authorization"][6:]).decode().partition(":")
        if form.get("client_id") != self.client_id or secret != self.client_secret:
            return web.json_response({"error": "invalid_client"}, status=401)
        grant = self.codes.pop(str(form.get("code")), None)  # a code works once
        if grant is None or form.get("redirect_uri") != grant["redirect_uri"]:
            return web.json_response({"error": "invalid_grant"}, status=400)
        challenge = b64(hashlib.sha256(str(form.get("code_verifier", "")).encode()).digest())
        if challenge != grant["challenge"]:
            return web.json_response({"error": "invalid_grant", "error_description": "PKCE"}, status=400)
        return web.json_response({"access_token": secrets.token_urlsafe(16), "token_type": "Bearer",
                                  "id_token": self.id_token(grant["nonce"])})

    def id_token(self, nonce: str) -> str:
        now = int(time.time())
        claims = {"iss": self.issuer, "aud": self.client_id, "iat": now, "exp": now + 300, "nonce": nonce,
                  "auth_time": now, **self.user}
        headers = {"kid": self.kid}
        key: Any = self.key
        match self.tamper:
            case "wrong_key":
                key = self.other_key
            case "wrong_audience":
                claims["aud"] = "someone-else"
            case "wrong_issuer":
                claims["iss"] = "https://evil.example"
            case "wrong_nonce":
                claims["nonce"] = "not-the-nonce"
            case "expired":
                claims["iat"], claims["exp"] = now - 3600, now - 600
            case "unknown_kid":
                headers["kid"] = "key-unknown"
            case "hs256":  # the classic confusion: HMAC keyed with the public key
                return self._hmac_token(claims)
            case "none":
                head = b64(json.dumps({"alg": "none", "typ": "JWT"}).encode())
                return f"{head}.{b64(json.dumps(claims).encode())}."
        return jwt.encode(claims, key, algorithm="RS256", headers=headers)

    def _hmac_token(self, claims: dict[str, Any]) -> str:
        public = self.key.public_key().public_bytes(serialization.Encoding.PEM,
                                                    serialization.PublicFormat.SubjectPublicKeyInfo)
        signing = f"{b64(json.dumps({'alg': 'HS256', 'typ': 'JWT', 'kid': self.kid}).encode())}." \
                  f"{b64(json.dumps(claims).encode())}"
        return f"{signing}.{b64(hmac.new(public, signing.encode(), hashlib.sha256).digest())}"

    async def jwks(self, request: web.Request) -> web.Response:
        jwk = jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key(), as_dict=True)
        return web.json_response({"keys": [{**jwk, "kid": self.kid, "alg": "RS256", "use": "sig"}]})
