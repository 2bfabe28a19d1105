"""Bearer tokens: the file holds the sha256 digest of each client's token, never the token. A candidate runs
as the server's user and can read what it can, the token file included; a digest names no token.

    python3 -m solbench.serve.tokens CLIENT      # a new token (give it to the client) and its line for the file
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import sys
from pathlib import Path

PREFIX = "sha256:"


def token_digest(token: str) -> str:
    return PREFIX + hashlib.sha256(token.encode()).hexdigest()


class Tokens:
    """Clients by the digest of their token."""

    def __init__(self, by_digest: dict[str, str]):
        self.by_digest = by_digest

    def client(self, token: str) -> str | None:
        """The client a bearer token names, or None."""
        if not token:
            return None
        digest = token_digest(token)
        for known, client in self.by_digest.items():  # every entry compared in constant time
            if hmac.compare_digest(known, digest):
                return client
        return None

    def clients(self) -> set[str]:
        return set(self.by_digest.values())


def read_tokens(path: Path) -> Tokens:
    """From a file of `CLIENT sha256:HEX` lines ('#' starts a comment)."""
    by_digest = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) != 2 or not words[1].startswith(PREFIX) or len(words[1]) != len(PREFIX) + 64:
            from solbench.core.errors import ConfigError

            raise ConfigError(f"{path}:{number}: expected 'CLIENT sha256:<64 hex digits>' (the token's digest, never "
                              f"the token: `python3 -m solbench.serve.tokens CLIENT` makes both)")
        by_digest[words[1].lower()] = words[0]
    return Tokens(by_digest)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python3 -m solbench.serve.tokens CLIENT", file=sys.stderr)
        return 2
    token = secrets.token_hex(20)
    print(f"token (give it to {argv[0]}): {token}")
    print(f"line for the tokens file:   {argv[0]} {token_digest(token)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
