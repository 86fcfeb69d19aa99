"""Kernelspec lookup for a process that starts kernels but never runs one itself.

jupyter_client's KernelSpecManager imports IPython (a tenth of a second or more, paid before the
kernel can even start) twice over: to find the legacy ``<ipython_dir>/kernels`` directory, and,
for the native ``python3`` kernel, to tell whether the directory it found is ipykernel's
built-in one, whose spec has no ``kernel.json`` and is made up in code. ``KernelSpecs`` finds
the IPython directory as IPython does in the usual case (``$IPYTHONDIR``, else ``~/.ipython``),
reads a directory holding a ``kernel.json`` as jupyter_client reads it in either case, and
defers to jupyter_client only for ipykernel's built-in spec.
"""

from __future__ import annotations

import os

from jupyter_client.kernelspec import KernelSpec, KernelSpecManager, NoSuchKernel
from jupyter_client.provisioning import KernelProvisionerFactory
from jupyter_core.paths import jupyter_path
from traitlets import default


class KernelSpecs(KernelSpecManager):
    """KernelSpecManager, finding the same kernels without importing IPython."""

    @default("kernel_dirs")
    def _kernel_dirs_default(self) -> list[str]:
        ipython_dir = os.environ.get("IPYTHONDIR") or os.path.join(
            os.path.expanduser("~"), ".ipython"
        )
        return [*jupyter_path("kernels"), os.path.join(ipython_dir, "kernels")]

    def _get_kernel_spec_by_name(self, kernel_name: str, resource_dir: str) -> KernelSpec:
        if not os.path.isfile(os.path.join(resource_dir, "kernel.json")):
            return super()._get_kernel_spec_by_name(kernel_name, resource_dir)
        spec = self.kernel_spec_class.from_resource_dir(resource_dir)
        if not KernelProvisionerFactory.instance(parent=self.parent).is_provisioner_available(spec):
            raise NoSuchKernel(kernel_name)
        return spec
