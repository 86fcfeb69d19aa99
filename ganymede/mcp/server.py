"""The MCP tools: each parses, calls the agent API, and renders; nothing more lives here.

Every reply, a refusal included, ends with the server's ``@@changed`` lines: that is how an
agent hears, mid-turn, that a person changed a notebook it read. Refusals are ``ToolError``s,
so the model reads the server's sentence (and for an edit of a cell it has not seen, the cell
as it is now and who changed it). Notebooks the agent read are listed as ``notebook://``
resources, and clients hear ``notifications/resources/updated`` when others change them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context, Image
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.mcpserver.resources.types import FunctionResource
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared.subscriptions import ResourceUpdated
from pydantic import Field

from ganymede.errors import EditRefused, GanymedeError, UsageError
from ganymede.mcp import replies
from ganymede.mcp.link import AgentLink
from ganymede.mcp.replies import Reply
from ganymede.notebook.render import REF_SCHEME

log = logging.getLogger("ganymede.mcp")

NAME = "ganymede"
INSTRUCTIONS = (
    "Read, edit and run Jupyter notebooks that people edit at the same time. Cells are named "
    "by id. Read a notebook before editing it; an edit of a cell someone changed since your "
    "read is refused with the cell as it is now: redo it on top. A reply ending with @@changed "
    "means others changed a notebook you read: call notebook_read(since: …) to see what."
)
WATCH_RETRY = 5.0

Content = list[str | Image]
Suggest = Annotated[
    bool | None,
    Field(
        description="true: propose the change for a person to accept or reject instead of "
        "making it (default: the server's [agent] mode)."
    ),
]
Title = Annotated[str | None, Field(description="With suggest: a short title people review.")]
Description = Annotated[str | None, Field(description="With suggest: why, for the reviewer.")]


class NotebookDoor:
    """The tools of SPEC §7 over one ``AgentLink``."""

    def __init__(self, link: AgentLink) -> None:
        self.link = link
        self.notifier: Any = None  # the connection of the latest request, to notify through
        self._watch: asyncio.Task[None] | None = None
        self.updates = InMemorySubscriptionBus()
        self.mcp: MCPServer[Any] = MCPServer(
            NAME, instructions=INSTRUCTIONS, subscriptions=self.updates
        )
        self._register()

    async def close(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        await self.link.close()

    # Plumbing shared by every tool

    async def answer(
        self, ctx: Context, produce: Callable[[str], Awaitable[Reply]], path: str = ""
    ) -> Content:
        """Run a tool under the agent's session; its reply or refusal, then the changed lines
        (``path``: the notebook the tool works on, to point a refused edit at)."""
        self.notifier = ctx.session
        client_name = _client_name(ctx)
        try:
            reply = await self.link.call(client_name, produce)
        except EditRefused as refused:
            text = replies.refused_edit_text(refused.cell, refused.by, str(refused), path)
            raise ToolError(await self._ending(text)) from None
        except GanymedeError as error:
            raise ToolError(await self._ending(str(error))) from None
        self._start_watching()
        return await self._content(reply)

    async def _content(self, reply: Reply) -> Content:
        lines = await self._changed_lines()
        if not reply.images:
            return [replies.with_changed_lines(reply, lines).text]
        content: Content = [reply.text]
        content += [
            Image(data=image.data, format=image.mime.split("/")[1]) for image in reply.images
        ]
        if lines:
            content.append("\n".join(lines) + "\n")
        return content

    async def _ending(self, text: str) -> str:
        return replies.with_changed_lines(Reply(text), await self._changed_lines()).text

    async def _changed_lines(self) -> list[str]:
        try:
            return await self.link.changed_lines()
        except GanymedeError as error:
            log.warning("ganymede mcp: could not ask what changed: %s", error)
            return []

    def _remember(self, path: str, notebook: dict[str, Any]) -> None:
        """List a notebook the agent read as a ``notebook://`` resource."""
        self.link.languages[path] = replies.language_of(notebook)
        if path in self.link.read_paths:
            return
        self.link.read_paths.add(path)

        async def current() -> str:
            return replies.read_reply(await self.read_for_resource(path)).text

        self.mcp.add_resource(
            FunctionResource(
                uri=f"{REF_SCHEME}{path}", name=path, fn=current, mime_type="text/plain"
            )
        )

    async def read_for_resource(self, path: str) -> dict[str, Any]:
        """A read for a resource: refusals as resource errors, which clients show as such."""
        try:
            return await self.link.call(
                None, lambda session: self.link.client.read(session, path, mark=False)
            )
        except GanymedeError as error:
            raise ResourceError(str(error)) from None

    # Resource updates

    def _start_watching(self) -> None:
        if self._watch is None and self.link.agent is not None:
            self._watch = asyncio.create_task(self._watch_for_updates())

    async def _watch_for_updates(self) -> None:
        """Tell the client when someone changes a notebook it reads (settled changes only)."""
        assert self.link.agent is not None
        cursor, epoch = 0, None
        wait: float | None = 0.0  # the first answer only says where the server stands
        while True:
            try:
                answer = await self.link.client.watch(
                    self.link.agent, True, None, cursor, epoch, wait
                )
            except GanymedeError as error:
                log.info("ganymede mcp: watching for resource updates: %s", error)
                await asyncio.sleep(WATCH_RETRY)
                continue
            cursor, epoch = int(answer.get("cursor", cursor)), answer.get("epoch", epoch)
            if wait == 0.0:
                wait = None  # past events were before the agent's reads: nothing to tell
                continue
            paths = {str(event["path"]) for event in answer.get("events") or []}
            for path in sorted(paths & self.link.read_paths):
                await self._notify_updated(f"{REF_SCHEME}{path}")

    async def _notify_updated(self, uri: str) -> None:
        await self.updates.publish(ResourceUpdated(uri=uri))
        if self.notifier is not None:
            with contextlib.suppress(Exception):  # a client gone mid-send; the next call tells
                await self.notifier.send_resource_updated(uri)

    # Tools

    def _register(self) -> None:
        tool = self.mcp.tool
        link = self.link

        @self.mcp.resource(
            REF_SCHEME + "{+path}",
            name="notebook",
            description="A notebook as it is live, in the @@cell format.",
            mime_type="text/plain",
        )
        async def notebook_resource(path: str) -> str:
            return replies.read_reply(await self.read_for_resource(path)).text

        @self.mcp.resource(
            REF_SCHEME + "{+path}#{cell}/outputs/{k}",
            name="cell outputs",
            description="A cell with its outputs in full, where a cut output's ref leads.",
            mime_type="text/plain",
        )
        async def outputs_resource(path: str, cell: str, k: str) -> str:
            try:
                return replies.full_cell_text(await self.read_for_resource(path), cell)
            except GanymedeError as error:
                raise ResourceError(str(error)) from None

        @tool(structured_output=False)
        async def notebooks_list(
            ctx: Context,
            dir: Annotated[
                str, Field(description="Directory under the root; '' is the root.")
            ] = "",
        ) -> Content:
            """List the notebooks and directories in a directory of the served root."""

            async def produce(session: str) -> Reply:
                entries = await link.client.notebooks(dir)
                return replies.json_lines("entry", entries, "No notebooks here.")

            return await self.answer(ctx, produce)

        @tool(structured_output=False)
        async def notebooks_search(
            ctx: Context,
            query: str,
            dir: str = "",
            outputs: Annotated[bool, Field(description="Search outputs too.")] = False,
            cell_type: Annotated[str | None, Field(description="code, markdown or raw")] = None,
            limit: int | None = None,
        ) -> Content:
            """Find cells whose source (or outputs) contain the query, in notebooks under dir."""

            async def produce(session: str) -> Reply:
                answer = await link.client.search(query, dir, outputs, cell_type, limit)
                return replies.search_reply(answer)

            return await self.answer(ctx, produce)

        @tool(structured_output=False)
        async def notebook_read(
            ctx: Context,
            path: Annotated[str | None, Field(description="The notebook, from the root.")] = None,
            since: Annotated[
                str | None,
                Field(description="A mark from an earlier read: only what others changed since."),
            ] = None,
            cells: Annotated[
                list[str | int] | None, Field(description="Only these cells (ids or indexes).")
            ] = None,
            outputs: bool = True,
        ) -> Content:
            """Read a notebook as it is live (unsaved edits included); the reply names your new
            read mark. With since, only what others added, edited, moved, deleted or ran."""

            async def produce(session: str) -> Reply:
                answer = await link.client.read(session, path, since)
                if cells is not None:
                    missing = replies.unknown_cells(answer["notebook"], cells)
                    if missing:
                        raise UsageError(f"no such cells in {answer['path']}: {missing}")
                self._remember(str(answer["path"]), answer["notebook"])
                return replies.read_reply(answer, cells=cells, outputs=outputs)

            return await self.answer(ctx, produce)

        @tool(structured_output=False)
        async def notebook_create(ctx: Context, path: str, kernel: str | None = None) -> Content:
            """Create an empty notebook (kernel: a kernelspec name, python3 by default)."""

            async def produce(session: str) -> Reply:
                created = await link.client.create(session, path, kernel)
                return replies.value_reply("created", {"path": created})

            return await self.answer(ctx, produce)

        async def edit(ctx: Context, path: str, op: str, **fields: Any) -> Content:
            async def produce(session: str) -> Reply:
                answer = await link.client.edit_cells(session, path, op, **fields)
                if "suggestion" in answer:
                    return replies.suggestion_reply(answer)
                return replies.edit_reply(op, path, answer)

            return await self.answer(ctx, produce, path)

        @tool(structured_output=False)
        async def cell_add(
            ctx: Context,
            path: str,
            source: str,
            cell_type: str = "code",
            after: Annotated[
                str | None, Field(description="The id of the cell to add after; none: the end.")
            ] = None,
            suggest: Suggest = None,
            title: Title = None,
            description: Description = None,
        ) -> Content:
            """Add a cell; the reply gives its id."""
            return await edit(
                ctx,
                path,
                "add",
                source=source,
                cell_type=cell_type,
                after=after,
                suggest=suggest,
                title=title,
                description=description,
            )

        @tool(structured_output=False)
        async def cell_edit(
            ctx: Context,
            path: str,
            id: str,
            source: str,
            suggest: Suggest = None,
            title: Title = None,
            description: Description = None,
        ) -> Content:
            """Replace a cell's source. Refused if someone changed the cell since your read."""
            return await edit(
                ctx,
                path,
                "edit",
                cell_id=id,
                source=source,
                suggest=suggest,
                title=title,
                description=description,
            )

        @tool(structured_output=False)
        async def cell_delete(
            ctx: Context,
            path: str,
            id: str,
            suggest: Suggest = None,
            title: Title = None,
            description: Description = None,
        ) -> Content:
            """Delete a cell. Refused if someone changed it since your read."""
            return await edit(
                ctx,
                path,
                "delete",
                cell_id=id,
                suggest=suggest,
                title=title,
                description=description,
            )

        @tool(structured_output=False)
        async def suggestions_list(
            ctx: Context,
            path: Annotated[str | None, Field(description="Only this notebook's.")] = None,
        ) -> Content:
            """Your suggestions not yet reported decided: open ones, and who accepted or
            rejected the others."""

            async def produce(session: str) -> Reply:
                listed = await link.client.suggestions(path, link.agent)
                return replies.suggestions_reply(listed)

            return await self.answer(ctx, produce)

        @tool(structured_output=False)
        async def cell_move(
            ctx: Context,
            path: str,
            id: str,
            after: Annotated[
                str | None, Field(description="The id of the cell to move after; null: the top.")
            ],
        ) -> Content:
            """Move a cell after another (null: to the top)."""
            return await edit(ctx, path, "move", cell_id=id, after=after)

        @tool(structured_output=False)
        async def cell_run(
            ctx: Context,
            path: str,
            ids: list[str],
            wait: Annotated[float, Field(description="Seconds to wait for the outputs.")] = 60,
        ) -> Content:
            """Run cells in the notebook's kernel (started if none); outputs go into it."""

            async def produce(session: str) -> Reply:
                answer = await link.client.run_cells(session, path, ids, wait)
                return replies.run_reply(path, answer, link.languages.get(path, ""))

            return await self.answer(ctx, produce)

        @tool(structured_output=False)
        async def notebook_run(
            ctx: Context,
            path: str,
            params: Annotated[
                dict[str, Any] | None, Field(description="Parameters, as ganymede execute -p.")
            ] = None,
            save: bool | None = None,
        ) -> Content:
            """Run a whole notebook headlessly on a fresh kernel; its status and named results."""

            async def produce(session: str) -> Reply:
                answer = await link.client.run_notebook(session, path, params, save)
                return replies.value_reply("run", answer)

            return await self.answer(ctx, produce)

        @tool(structured_output=False)
        async def notebook_results(ctx: Context, path: str) -> Content:
            """The notebook's named results (what its cells recorded with result())."""

            async def produce(session: str) -> Reply:
                return replies.value_reply("results", await link.client.results(path))

            return await self.answer(ctx, produce)

        async def kernel_action(ctx: Context, path: str, action: str) -> Content:
            async def produce(session: str) -> Reply:
                await link.client.kernel(session, path, action)
                done = "restarted" if action == "restart" else "interrupted"
                return replies.value_reply(done, {"path": path})

            return await self.answer(ctx, produce)

        @tool(structured_output=False)
        async def kernel_restart(ctx: Context, path: str) -> Content:
            """Restart the notebook's kernel (its variables are lost)."""
            return await kernel_action(ctx, path, "restart")

        @tool(structured_output=False)
        async def kernel_interrupt(ctx: Context, path: str) -> Content:
            """Interrupt the cell the notebook's kernel is running."""
            return await kernel_action(ctx, path, "interrupt")

        @tool(structured_output=False)
        async def request_done(ctx: Context, path: str, id: str) -> Content:
            """Mark a request cell (@agent …) answered, once your answer is below it."""

            async def produce(session: str) -> Reply:
                await link.client.request_done(session, path, id)
                return replies.value_reply("done", {"id": id, "path": path})

            return await self.answer(ctx, produce)


def _client_name(ctx: Context) -> str | None:
    params = getattr(ctx.session, "client_params", None)
    info = getattr(params, "client_info", None)
    name = getattr(info, "name", None)
    return name if isinstance(name, str) and name else None
