"""What the extension makes of the classes a server is configured with: Ganymede's part in
front, the configured class's own methods still run, and what it cannot wrap left as it is."""

from __future__ import annotations

from typing import Any

from jupyter_server.gateway.connections import GatewayWebSocketConnection
from jupyter_server.gateway.managers import GatewayMappingKernelManager
from jupyter_server.services.contents.largefilemanager import (
    AsyncLargeFileManager,
    LargeFileManager,
)
from jupyter_server.services.kernels.connection.channels import ZMQChannelsWebsocketConnection
from jupyter_server.services.kernels.kernelmanager import (
    AsyncMappingKernelManager,
    MappingKernelManager,
)

from ganymede.serve.contents import (
    FileIdsFollow,
    FileIdsFollowSync,
    GanymedeContentsManager,
    with_file_ids,
)
from ganymede.serve.kernels.manager import HostKernelManager, with_host_comms
from ganymede.serve.kernels.output import BoundedGatewayConnection
from ganymede.serve.kernels.websocket import HostFilteringConnection, with_host_filter


class UsersKernels(AsyncMappingKernelManager):
    async def start_kernel(self, **kwargs: Any) -> str:
        return await super().start_kernel(**kwargs)


class UsersSocket(ZMQChannelsWebsocketConnection):
    def handle_outgoing_message(self, stream: Any, outgoing_msg: list[Any]) -> None:
        super().handle_outgoing_message(stream, outgoing_msg)


def test_contents_managers_get_the_wrapper_of_their_kind_once() -> None:
    wrapped_async = with_file_ids(AsyncLargeFileManager)
    wrapped_sync = with_file_ids(LargeFileManager)
    assert wrapped_async.__bases__ == (FileIdsFollow, AsyncLargeFileManager)
    assert wrapped_sync.__bases__ == (FileIdsFollowSync, LargeFileManager)
    assert with_file_ids(wrapped_async) is wrapped_async
    assert with_file_ids(GanymedeContentsManager) is GanymedeContentsManager


def test_a_users_kernel_manager_runs_behind_the_host_comms() -> None:
    assert with_host_comms(AsyncMappingKernelManager) is HostKernelManager
    wrapped = with_host_comms(UsersKernels)
    mro = wrapped.__mro__
    assert (
        mro.index(HostKernelManager)
        < mro.index(UsersKernels)
        < mro.index(AsyncMappingKernelManager)
    )
    assert with_host_comms(wrapped) is wrapped


def test_kernel_managers_that_start_no_local_kernels_are_kept() -> None:
    assert with_host_comms(GatewayMappingKernelManager) is GatewayMappingKernelManager
    assert with_host_comms(MappingKernelManager) is MappingKernelManager


def test_kernel_websockets_get_the_host_filter_or_for_a_gateway_the_output_bound() -> None:
    assert with_host_filter(ZMQChannelsWebsocketConnection) is HostFilteringConnection
    assert with_host_filter(GatewayWebSocketConnection) is BoundedGatewayConnection
    wrapped = with_host_filter(UsersSocket)
    mro = wrapped.__mro__
    assert mro.index(HostFilteringConnection) < mro.index(UsersSocket)
    assert mro.index(UsersSocket) < mro.index(ZMQChannelsWebsocketConnection)
    assert with_host_filter(wrapped) is wrapped
