"""A real OpenID provider for the sign-in tests: ``oidc-provider`` under Node
(``tests/browser/node``, installed from its lock file by ``make bootstrap``)."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from joserfc.jwk import RSAKey

from tests.acceptance.toolchains import require
from tests.support import answers, free_port

NODE_DIR = Path(__file__).resolve().parent / "node"
CLIENT_ID = "backfiller-ui"
CLIENT_SECRET = "a-secret-only-the-tests-know-" + "x" * 16

# Who may sign in, and what the provider says of them.
ACCOUNTS: dict[str, dict[str, Any]] = {
    "alice": {
        "email": "alice@example.com",
        "name": "Alice Admin",
        "groups": ["everyone", "backfiller-admins"],
        "team": "platform",
    },
    "olga": {
        "email": "olga@example.com",
        "name": "Olga Operator",
        "groups": ["everyone", "data-eng"],
        "team": "sales",
        "backfiller_jobs": ["daily_sales"],
    },
    "victor": {"email": "victor@example.com", "name": "Victor Viewer", "groups": ["everyone"]},
    "nobody": {"email": "nobody@example.com", "name": "No Role", "groups": ["contractors"]},
}
ROLE_MAP = ["admin=backfiller-admins", "operator=data-eng", "viewer=everyone"]


def new_key(kid: str) -> dict[str, Any]:
    key = RSAKey.generate_key(2048, parameters={"kid": kid, "use": "sig", "alg": "RS256"})
    return dict(key.as_dict(private=True))


class IdentityProvider:
    """``oidc-provider`` on a port of its own; ``keys`` are private JWKs, the first signs."""

    def __init__(self, redirect_base: str, keys: list[dict[str, Any]], port: int | None = None):
        node = shutil.which("node")
        require("node", node is not None, "nodejs")
        require(
            "tests/browser/node/node_modules",
            (NODE_DIR / "node_modules" / "oidc-provider").exists(),
            "the browser tests' npm packages: make bootstrap",
        )
        self.port = port or free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.keys = keys
        config = {
            "port": self.port,
            "clientId": CLIENT_ID,
            "clientSecret": CLIENT_SECRET,
            "redirectUris": [f"{redirect_base}/auth/callback"],
            "postLogoutRedirectUris": [f"{redirect_base}/"],
            "keys": keys,
            "accounts": ACCOUNTS,
        }
        self.config_path = Path(tempfile.mkstemp(prefix="oidc-", suffix=".json")[1])
        self.config_path.write_text(json.dumps(config))
        self.log_path = Path(tempfile.mkstemp(prefix="oidc-", suffix=".log")[1])
        self.log = open(self.log_path, "w")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [str(node), "oidc_provider.mjs", str(self.config_path)],
            cwd=NODE_DIR,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the provider exited: {self.log_path.read_text()}")
            if answers(f"{self.issuer}/.well-known/openid-configuration"):
                return
            time.sleep(0.1)
        raise RuntimeError(f"the provider did not start: {self.log_path.read_text()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()
        self.config_path.unlink(missing_ok=True)


def oidc_args(issuer: str, secret_file: Path) -> list[str]:
    """``serve``'s options for this provider, with the tests' role map."""
    args = [
        *("--oidc-issuer", issuer, "--oidc-client-id", CLIENT_ID),
        *("--oidc-client-secret-file", str(secret_file)),
        *("--oidc-team-claim", "team", "--oidc-scope-claim", "backfiller_jobs"),
    ]
    for pair in ROLE_MAP:
        args += ["--oidc-role", pair]
    return args
