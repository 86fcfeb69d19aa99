"""Users and roles for a real server, as a deployment would configure them.

``TokenUsers`` gives each token in ``TOKENS`` its own named user (the server's own token stays
an anonymous user, as in any ``jupyter server``); ``Roles`` lets each named user do only what
``ROLES`` lists, or everything but what ``DENIALS`` lists (a viewer in JupyterLab, who still
lists files and runs kernels), and everyone else (the server's own token) everything. A server
takes them with ``--ServerApp.identity_provider_class=tests.serve.roles.TokenUsers`` and
``--ServerApp.authorizer_class=tests.serve.roles.Roles``.
"""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.authorizer import Authorizer
from jupyter_server.auth.identity import IdentityProvider, User

READ_CONTENTS = ("read", "contents")
WRITE_CONTENTS = ("write", "contents")
EXECUTE_KERNELS = ("execute", "kernels")

ROLES: dict[str, set[tuple[str, str]]] = {
    "reader": {READ_CONTENTS},
    "editor": {READ_CONTENTS, WRITE_CONTENTS},
    "runner": {READ_CONTENTS, WRITE_CONTENTS, EXECUTE_KERNELS},
    "nobody": set(),
}
DENIALS: dict[str, set[tuple[str, str]]] = {"viewer": {WRITE_CONTENTS}}
TOKENS = {f"{name}-token": name for name in (*ROLES, *DENIALS)}

SERVER_OPTIONS = (
    "--ServerApp.identity_provider_class=tests.serve.roles.TokenUsers",
    "--ServerApp.authorizer_class=tests.serve.roles.Roles",
)


def token_of(name: str) -> str:
    return next(token for token, user in TOKENS.items() if user == name)


class TokenUsers(IdentityProvider):
    """The server's token as usual, and one more token per user in ``ROLES``."""

    async def get_user_token(self, handler: Any) -> User | None:
        name = TOKENS.get(self.get_token(handler) or "")
        if name is not None:
            return User(username=name, name=name, display_name=name)
        return await super().get_user_token(handler)


class Roles(Authorizer):
    """What ``ROLES`` lists, or all but what ``DENIALS`` lists; everything for the server's own
    token."""

    def is_authorized(self, handler: Any, user: User, action: str, resource: str) -> bool:
        if user.username in DENIALS:
            return (action, resource) not in DENIALS[user.username]
        allowed = ROLES.get(user.username)
        return allowed is None or (action, resource) in allowed
