"""The contents manager: jupyter_server's own, plus file ids that follow renames and deletes."""

from __future__ import annotations

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from traitlets import Instance

from ganymede.fileid import FileIdStore


class GanymedeContentsManager(AsyncLargeFileManager):
    """Moves or drops file ids once a rename or delete through the contents API has succeeded.

    The store is attached by the server extension, which is loaded after the contents manager
    exists; until then (or when used on its own) files are renamed and deleted as usual.
    """

    file_ids = Instance(FileIdStore, allow_none=True)

    async def rename_file(self, old_path: str, new_path: str) -> None:
        await super().rename_file(old_path, new_path)
        if self.file_ids is not None:
            self.file_ids.move(old_path, new_path)

    async def delete_file(self, path: str) -> None:
        await super().delete_file(path)
        if self.file_ids is not None:
            self.file_ids.delete(path)
