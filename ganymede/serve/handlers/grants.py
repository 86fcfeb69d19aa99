"""``/api/host/grants``: notebooks' grants over REST, for clients and ``ganymede grant``.

``GET`` without ``path`` answers the defaults and every notebook with a grant of its own;
``GET ?path=`` one notebook (its own keys, the grant in force, what it wants); ``PUT ?path=``
makes the JSON body ``{"read": [...], "run": [...], "edit_self": bool}`` the notebook's grant
(absent keys follow the defaults); ``DELETE ?path=`` removes it, ``&key=`` one key of it.
A bad body or path is a 400, an unknown notebook a 404, an unusable grants file a 500.
Grants widen what kernels may do, so they are their own resource for the Authorizer:
``GET`` needs ``read`` on ``grants``, ``PUT`` and ``DELETE`` need ``write`` on it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web

from ganymede.errors import ConfigError, NotebookNotFound, PathError, UsageError
from ganymede.grant import GrantAdmin, NotebookGrant
from ganymede.serve.context import SETTINGS_KEY, GanymedeContext
from ganymede.serve.roles import GRANTS, READ, WRITE


class GrantsHandler(APIHandler):
    auth_resource = GRANTS

    @property
    def admin(self) -> GrantAdmin:
        context: GanymedeContext = self.settings[SETTINGS_KEY]
        return GrantAdmin(context.grants)

    @web.authenticated
    @authorized(READ, GRANTS)
    def get(self) -> None:
        path = self.get_argument("path", None)
        if path is None:
            self._answer(lambda: self.admin.overview().to_json())
        else:
            self._answer(lambda: self.admin.show(path).to_json())

    @web.authenticated
    @authorized(WRITE, GRANTS)
    def put(self) -> None:
        path = self.get_argument("path")
        self._answer(lambda: self.admin.put(path, self._body()).to_json())

    @web.authenticated
    @authorized(WRITE, GRANTS)
    def delete(self) -> None:
        path = self.get_argument("path")
        key = self.get_argument("key", None)
        if key is None:
            self._answer(lambda: self.admin.delete(path).to_json())
        else:
            self._answer(lambda: self._without_key(path, key))

    def _without_key(self, path: str, key: str) -> dict[str, Any]:
        own = self.admin.show(path).own.without(key)
        return self.admin.put(path, own).to_json()

    def _body(self) -> NotebookGrant:
        try:
            data = json.loads(self.request.body or b"")
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise UsageError(f"body is not JSON: {error}") from None
        return NotebookGrant.from_json(data, "body")

    def _answer(self, produce: Callable[[], Any]) -> None:
        """Run ``produce`` and send its JSON, or the error it raised as a JSON refusal."""
        try:
            answer = produce()
        except (UsageError, PathError) as error:
            return self._refuse(HTTPStatus.BAD_REQUEST, str(error))
        except NotebookNotFound as error:
            return self._refuse(HTTPStatus.NOT_FOUND, str(error))
        except ConfigError as error:
            self.log.error("ganymede: grants: %s", error)
            return self._refuse(HTTPStatus.INTERNAL_SERVER_ERROR, str(error))
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(answer))

    def _refuse(self, status: int, message: str) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"message": message, "reason": HTTPStatus(status).phrase}))


default_handlers = [(r"/api/host/grants", GrantsHandler)]
