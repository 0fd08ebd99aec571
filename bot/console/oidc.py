"""OpenID Connect sign-in for the console: the authorization code flow with PKCE, state and
nonce, and the ID token's signature checked against the provider's published keys (JWKS).

Any standard provider works from its issuer URL alone (the discovery document names the
endpoints): Sign in with Slack (`https://slack.com`) and Microsoft Entra ID
(`https://login.microsoftonline.com/<tenant>/v2.0`) are the two documented. Only asymmetric
signatures are accepted (RS*, PS*, ES*, EdDSA), never `none` or a shared-secret HS*, whatever
the token's header says; a key id the cached JWKS lacks fetches it once more (key rotation),
at most once a minute (a forged header cannot make us hammer the provider)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from typing import Any
from urllib.parse import urlencode

import aiohttp
import jwt
from pydantic import BaseModel, ValidationError

from bot.console.settings import secure_url

ASYMMETRIC = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
SCOPES = "openid email profile"
LEEWAY_S = 60  # clock skew between us and the provider
METADATA_TTL_S = 3600.0
JWKS_REFETCH_S = 60.0
TIMEOUT = aiohttp.ClientTimeout(total=10)


class OidcError(Exception):
    """Sign-in failed: the message says why in one line, without secrets."""


class ProviderMetadata(BaseModel):
    """The parts of the discovery document (`/.well-known/openid-configuration`) we use."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    id_token_signing_alg_values_supported: list[str] = ["RS256"]
    token_endpoint_auth_methods_supported: list[str] = ["client_secret_basic"]


class Claims(BaseModel):
    """The ID token's claims an admin is recognised by (others are kept in `extra`)."""

    model_config = {"extra": "allow"}

    sub: str
    email: str | None = None
    email_verified: bool | None = None
    name: str | None = None
    oid: str | None = None  # Entra: the user's object id (Teams' aadObjectId)

    def keys(self) -> list[str]:
        """What ASKDESK_ADMINS may list for this person: ids as they are, the email lower-case
        (only when the provider does not say it is unverified)."""
        extra = self.model_extra or {}
        found = [self.sub, extra.get("https://slack.com/user_id"), self.oid]
        if self.email and self.email_verified is not False:
            found.append(self.email.lower())
        return [k for k in found if isinstance(k, str) and k]

    def shown(self) -> str:
        return self.name or self.email or self.sub


class Pending(BaseModel):
    """A sign-in between the redirect to the provider and its callback (kept server-side)."""

    state: str
    nonce: str
    verifier: str
    binding: str  # the browser's login cookie: a callback from another browser is refused
    next: str = "/"
    created: float


def pkce_challenge(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class OidcClient:
    """One provider: discovery, the authorization URL, the code exchange, the ID token check."""

    def __init__(self, issuer: str, client_id: str, client_secret: str) -> None:
        self.issuer = issuer.rstrip("/")
        self.client_id = client_id
        self._secret = client_secret
        self._http: aiohttp.ClientSession | None = None
        self._metadata: tuple[float, ProviderMetadata] | None = None
        self._keys: dict[str, dict[str, Any]] = {}
        self._keys_at = 0.0

    @property
    def name(self) -> str:
        """How the sign-in button names the provider."""
        if "slack.com" in self.issuer:
            return "Slack"
        if "microsoftonline" in self.issuer or "login.microsoft" in self.issuer:
            return "Microsoft"
        return self.issuer.split("//", 1)[-1].split("/", 1)[0]

    def _client(self) -> aiohttp.ClientSession:
        if self._http is None or self._http.closed:
            self._http = aiohttp.ClientSession(timeout=TIMEOUT)
        return self._http

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()

    async def _get_json(self, url: str) -> Any:
        try:
            async with self._client().get(url, headers={"Accept": "application/json"}) as resp:
                if resp.status != 200:
                    raise OidcError(f"{url} answered HTTP {resp.status}")
                return await resp.json(content_type=None)
        except aiohttp.ClientError as exc:
            raise OidcError(f"cannot reach {url}: {type(exc).__name__}") from None
        except ValueError:
            raise OidcError(f"{url} did not return JSON") from None

    async def metadata(self) -> ProviderMetadata:
        """The discovery document (cached an hour); its issuer must be the configured one."""
        if self._metadata is not None and time.monotonic() - self._metadata[0] < METADATA_TTL_S:
            return self._metadata[1]
        url = f"{self.issuer}/.well-known/openid-configuration"
        try:
            found = ProviderMetadata.model_validate(await self._get_json(url))
        except ValidationError as exc:
            raise OidcError(f"{url} is not an OpenID configuration ({exc.errors()[0]['loc'][0]} missing)") from None
        if found.issuer.rstrip("/") != self.issuer:
            raise OidcError(f"{url} names issuer {found.issuer!r}, not {self.issuer!r}")
        for endpoint in (found.authorization_endpoint, found.token_endpoint, found.jwks_uri):
            if not secure_url(endpoint):
                raise OidcError(f"the provider's endpoint {endpoint} is not https")
        self._metadata = (time.monotonic(), found)
        return found

    def start(self, binding: str, next_path: str) -> Pending:
        """A new sign-in's secrets: state (CSRF of the callback), nonce (binds the ID token to
        it) and the PKCE verifier (the code is useless to whoever intercepts it)."""
        return Pending(state=secrets.token_urlsafe(24), nonce=secrets.token_urlsafe(24),
                       verifier=secrets.token_urlsafe(48), binding=binding, next=next_path, created=time.time())

    async def authorization_url(self, pending: Pending, redirect_uri: str) -> str:
        meta = await self.metadata()
        query = {"response_type": "code", "client_id": self.client_id, "redirect_uri": redirect_uri,
                 "scope": SCOPES, "state": pending.state, "nonce": pending.nonce,
                 "code_challenge": pkce_challenge(pending.verifier), "code_challenge_method": "S256"}
        sep = "&" if "?" in meta.authorization_endpoint else "?"
        return f"{meta.authorization_endpoint}{sep}{urlencode(query)}"

    async def exchange(self, code: str, pending: Pending, redirect_uri: str) -> str:
        """The authorization code traded for tokens at the token endpoint: the ID token."""
        meta = await self.metadata()
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
                "code_verifier": pending.verifier, "client_id": self.client_id}
        auth = None
        if "client_secret_post" in meta.token_endpoint_auth_methods_supported:
            form["client_secret"] = self._secret
        else:  # the spec's default
            auth = aiohttp.BasicAuth(self.client_id, self._secret)
        try:
            async with self._client().post(meta.token_endpoint, data=form, auth=auth,
                                           headers={"Accept": "application/json"}) as resp:
                body = await resp.json(content_type=None)
        except aiohttp.ClientError as exc:
            raise OidcError(f"cannot reach the token endpoint: {type(exc).__name__}") from None
        except ValueError:
            raise OidcError("the token endpoint did not return JSON") from None
        token = body.get("id_token") if isinstance(body, dict) else None
        if resp.status != 200 or not isinstance(token, str):
            error = body.get("error") if isinstance(body, dict) else None
            raise OidcError(f"the provider refused the sign-in code ({error or f'HTTP {resp.status}'})")
        return token

    async def _key(self, kid: str | None, alg: str) -> Any:
        meta = await self.metadata()
        if kid not in self._keys and time.monotonic() - self._keys_at > JWKS_REFETCH_S:
            jwks = await self._get_json(meta.jwks_uri)
            keys = jwks.get("keys", []) if isinstance(jwks, dict) else []
            self._keys = {k.get("kid"): k for k in keys if isinstance(k, dict)}
            self._keys_at = time.monotonic()
        jwk = self._keys.get(kid)
        if jwk is None and kid is None and len(self._keys) == 1:
            jwk = next(iter(self._keys.values()))
        if jwk is None:
            raise OidcError("the ID token is signed with a key the provider does not publish")
        if jwk.get("alg", alg) != alg or jwk.get("use", "sig") != "sig":
            raise OidcError("the ID token's algorithm is not its key's")
        try:
            return jwt.PyJWK(jwk, algorithm=alg).key
        except jwt.PyJWTError as exc:
            raise OidcError(f"the provider's key cannot be read ({type(exc).__name__})") from None

    async def verify(self, id_token: str, pending: Pending) -> Claims:
        """The ID token's claims, once its signature (JWKS), issuer, audience, expiry and nonce check out."""
        meta = await self.metadata()
        try:
            header = jwt.get_unverified_header(id_token)
        except jwt.PyJWTError:
            raise OidcError("the ID token is malformed") from None
        alg = header.get("alg")
        allowed = [a for a in meta.id_token_signing_alg_values_supported if a in ASYMMETRIC] or ["RS256"]
        if alg not in allowed:
            raise OidcError(f"the ID token's algorithm {alg!r} is not accepted")
        key = await self._key(header.get("kid"), alg)
        try:
            claims = jwt.decode(id_token, key=key, algorithms=[alg], audience=self.client_id, issuer=meta.issuer,
                                leeway=LEEWAY_S, options={"require": ["exp", "iat", "iss", "aud", "sub"]})
        except jwt.PyJWTError as exc:
            raise OidcError(f"the ID token was refused ({type(exc).__name__})") from None
        nonce = claims.get("nonce")
        if not isinstance(nonce, str) or not hmac.compare_digest(nonce, pending.nonce):
            raise OidcError("the ID token's nonce is not this sign-in's")
        audience = claims.get("aud")
        if isinstance(audience, list) and len(audience) > 1 and claims.get("azp") != self.client_id:
            raise OidcError("the ID token was issued to another client (azp)")
        try:
            return Claims.model_validate(claims)
        except ValidationError:
            raise OidcError("the ID token lacks its subject") from None
