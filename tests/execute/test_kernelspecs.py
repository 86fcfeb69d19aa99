"""Our kernelspec lookup finds what jupyter_client's finds, without importing IPython."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from ipykernel.kernelspec import RESOURCES
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

from ganymede.execute.kernelspecs import KernelSpecs


@pytest.fixture
def own_kernel(isolated_jupyter: Path) -> str:
    directory = isolated_jupyter / "data" / "kernels" / "own"
    directory.mkdir(parents=True)
    spec = {
        "argv": ["python", "-m", "own", "{connection_file}"],
        "display_name": "Own",
        "language": "own",
    }
    (directory / "kernel.json").write_text(json.dumps(spec))
    return "own"


def test_the_same_directories_and_kernels_as_jupyter_client(
    own_kernel: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    ours, theirs = KernelSpecs(), KernelSpecManager()
    assert ours.kernel_dirs == theirs.kernel_dirs
    assert ours.find_kernel_specs() == theirs.find_kernel_specs()
    for name in ("python3", own_kernel):
        assert ours.get_kernel_spec(name).to_dict() == theirs.get_kernel_spec(name).to_dict()
    with pytest.raises(NoSuchKernel):
        ours.get_kernel_spec("no-such-kernel")


def test_ipykernels_built_in_spec_is_still_made_up_in_code() -> None:
    ours = KernelSpecs()._get_kernel_spec_by_name("python3", RESOURCES)
    theirs = KernelSpecManager()._get_kernel_spec_by_name("python3", RESOURCES)
    assert ours.to_dict() == theirs.to_dict()
    assert ours.argv[0] == sys.executable


def test_looking_up_the_native_kernel_imports_no_ipython() -> None:
    probe = (
        "import sys\n"
        "from ganymede.execute.kernelspecs import KernelSpecs\n"
        "KernelSpecs().get_kernel_spec('python3')\n"
        "print(sorted({'IPython', 'ipykernel'} & set(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"
