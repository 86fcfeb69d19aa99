"""What Ganymede's endpoints ask jupyter_server's Authorizer, named once.

jupyter_server leaves who may do what to its ``Authorizer``
(``is_authorized(handler, user, action, resource)``, configured with
``ServerApp.authorizer_class``; JupyterHub and custom deployments bring their own). Ganymede asks
it in the terms those Authorizers already know, so a role written for JupyterLab covers
Ganymede too: reading and editing documents are ``read`` / ``write`` on ``contents``, runs are
``execute`` on ``kernels``. What kernels may ask the server for is a separate power, so the
grants API asks about its own resource, ``grants``.

Every endpoint names its action and resource with ``@authorized(ACTION, RESOURCE)`` rather than
leaving them to the HTTP method: a POST that only reads (an agent's ``read``) must not need
``write``, and ``@authorized`` with no arguments remembers the resource of the first handler
class it served, so a method shared by handlers on different resources would check the wrong one.
"""

from __future__ import annotations

import inspect

from jupyter_core.utils import ensure_async
from jupyter_server import CallContext
from jupyter_server.base.handlers import JupyterHandler

READ = "read"
WRITE = "write"
EXECUTE = "execute"

CONTENTS = "contents"
KERNELS = "kernels"
GRANTS = "grants"


async def allows(handler: JupyterHandler, action: str, resource: str) -> bool:
    """Whether the Authorizer lets the request's user do ``action`` on ``resource``.

    For decisions that shape an answer rather than refuse it (a room connection that may read
    but not write is made read-only) and for second checks beyond the one ``@authorized`` makes.
    """
    user = handler.current_user
    if not user:
        return False
    decision = handler.authorizer.is_authorized(handler, user, action, resource)
    return bool(await ensure_async(decision))


async def request_allows(action: str, resource: str) -> bool:
    """Whether the request being served lets its user do ``action`` on ``resource``; True
    outside a request (the server's own work).

    For code below the handlers, which jupyter_server hands no handler: the contents manager
    reports a file a viewer may not write as ``writable: false``, as jupyter_server reports a
    file the server may not write.
    """
    handler = CallContext.get(CallContext.JUPYTER_HANDLER)
    if not isinstance(handler, JupyterHandler):
        return True
    return await allows(handler, action, resource)


def request_allows_now(action: str, resource: str) -> bool:
    """``request_allows`` for synchronous code (a synchronous contents manager's ``get``): an
    Authorizer that decides asynchronously cannot be waited for there, so it is taken to allow;
    the room connection, which does wait, still makes such a user a viewer."""
    handler = CallContext.get(CallContext.JUPYTER_HANDLER)
    if not isinstance(handler, JupyterHandler):
        return True
    user = handler.current_user
    if not user:
        return False
    decision = handler.authorizer.is_authorized(handler, user, action, resource)
    if inspect.isawaitable(decision):
        if inspect.iscoroutine(decision):
            decision.close()
        return True
    return bool(decision)
