"""A run's kernel, started where its launch says: on this machine, or on a kernel gateway.

Apart from both kinds of kernel so that neither module needs the other: the gateway's kernel
is built on the rules ``kernel.RunKernel`` holds, and only this choice needs both. The gateway's
module is imported only for a run that uses one: it brings httpx, some 80 ms of every other
run's start.
"""

from __future__ import annotations

from ganymede.execute.kernel import Kernel, KernelLaunch, RunKernel


async def start_kernel(launch: KernelLaunch, startup_timeout: float) -> RunKernel:
    """The launch's kernel, started here or on its gateway, once it has answered."""
    if launch.gateway is not None:
        from ganymede.execute.gateway import GatewayKernel

        return await GatewayKernel.start(launch, startup_timeout)
    return await Kernel.start(launch, startup_timeout)
