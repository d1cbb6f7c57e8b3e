"""`python -m cni_plugin.install DIR`, run as a subprocess as a user types it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cni_plugin.install import EXECUTABLES


def install_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cni_plugin.install", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_prints_usage_and_creates_nothing(flag: str, tmp_path: Path) -> None:
    proc = install_cli(flag, cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.startswith("usage: python -m cni_plugin.install [-h] DIR\n")
    assert "absolute path of the CNI bin dir" in proc.stdout
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args", [(), ("/a", "/b")], ids=["no DIR", "two DIRs"])
def test_anything_but_one_dir_is_a_usage_error(args: tuple[str, ...], tmp_path: Path) -> None:
    proc = install_cli(*args, cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.startswith("usage: python -m cni_plugin.install [-h] DIR\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("directory", ["bin", "./bin", "--", "-"])
def test_a_relative_dir_is_a_usage_error(directory: str, tmp_path: Path) -> None:
    args = ("--", directory) if directory.startswith("-") else (directory,)
    proc = install_cli(*args, cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.startswith("usage: ")
    assert f"error: DIR must be an absolute path, got {directory!r}" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_an_absolute_dir_is_made_and_gets_every_executable(tmp_path: Path) -> None:
    bin_dir = tmp_path / "opt" / "cni" / "bin"
    proc = install_cli(str(bin_dir), cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.splitlines() == [str(bin_dir / name) for name in EXECUTABLES]
    for name in EXECUTABLES:
        assert os.access(bin_dir / name, os.X_OK)
