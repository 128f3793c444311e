"""Secrets, read at load time and never stored on the models' fields: the judge's API key and
the receivers' bearer tokens, and the scrubbing of their values out of any text shown.

The judge's API key never comes from the configuration: it is read from the environment
variable named by `judge.api_key_env` (default: the provider's own, `ANTHROPIC_API_KEY`,
`OPENAI_API_KEY`) or, when set, from the file
`judge.api_key_file`, and is held as a `SecretStr` on `config.judge.api_key` (not a field: it
never appears in a dump, a repr or an error). A receiver's bearer token is read the same way,
from `bearer_token_env` or `bearer_token_file`, into `auth.token`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Protocol

from pydantic import SecretStr

from collector.config._problems import Problem

__all__ = ["API_KEY_REFUSED", "MASK", "ApiKeySource", "TokenSource", "read_api_key",
           "read_bearer_token", "scrub"]

MASK = "***"
API_KEY_REFUSED = ("the judge's API key is never read from the configuration: put it in the "
                   "environment variable named by judge.api_key_env (default: the provider's "
                   "own, e.g. ANTHROPIC_API_KEY) or in a file named by judge.api_key_file")


class ApiKeySource(Protocol):
    """Where the judge's API key is read from (the `judge:` block)."""

    @property
    def key_variable(self) -> str: ...

    @property
    def api_key_file(self) -> Path | None: ...


class TokenSource(Protocol):
    """Where a receiver's bearer token is read from (its `auth:` block)."""

    @property
    def bearer_token_env(self) -> str | None: ...

    @property
    def bearer_token_file(self) -> Path | None: ...


def read_api_key(judge: ApiKeySource, env: Mapping[str, str], where: str = "judge"
                 ) -> tuple[SecretStr | None, Problem | None]:
    """The judge's key from its file or variable (None: not found), or why it cannot be read
    (`where`: the judge's key path, `judge` or `judges.<name>`)."""
    if judge.api_key_file is not None:
        try:
            key = judge.api_key_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not readable"
            return None, Problem(f"{where}.api_key_file",
                                 f"cannot read the API key file {judge.api_key_file}: {reason}")
        if not key:
            return None, Problem(f"{where}.api_key_file",
                                 f"the API key file {judge.api_key_file} is empty")
        return SecretStr(key), None
    key = env.get(judge.key_variable, "").strip()
    return (SecretStr(key) if key else None), None


def read_bearer_token(auth: TokenSource, env: Mapping[str, str], where: str
                      ) -> tuple[SecretStr | None, Problem | None]:
    """The receivers' bearer token from its file or variable (never echoed in a problem)."""
    if auth.bearer_token_file is not None:
        try:
            token = auth.bearer_token_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not readable"
            return None, Problem(f"{where}.bearer_token_file",
                                 f"cannot read the token file {auth.bearer_token_file}: {reason}")
        if not token:
            return None, Problem(f"{where}.bearer_token_file",
                                 f"the token file {auth.bearer_token_file} is empty")
        return SecretStr(token), None
    if auth.bearer_token_env is not None:
        token = env.get(auth.bearer_token_env, "").strip()
        if not token:
            return None, Problem(f"{where}.bearer_token_env",
                                 f"the environment variable {auth.bearer_token_env} is not set "
                                 f"or empty")
        return SecretStr(token), None
    return None, None


def scrub(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret of 4 characters or more replaced by `***`."""
    for secret in secrets:
        if len(secret) >= 4:
            text = text.replace(secret, MASK)
    return text
