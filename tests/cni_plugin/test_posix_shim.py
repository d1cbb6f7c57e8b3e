"""posix_shim gives the exec path what it used from `os`, with the same results and errors."""

from __future__ import annotations

import os
import posixpath
import subprocess
import sys
from pathlib import Path

import pytest

from cni_plugin import posix_shim as posix_shim
from cni_plugin.install import PROJECT_ROOT

PATHS = ["", "/", "//", "///", "a", "a/", "/a/b/", "//a//b", "///a/./b/../c", "a/../..",
         "../a", "./", "/..", "a/b/../../..", "/var/lib/cni/", "x.y/..."]


@pytest.mark.parametrize("path", PATHS)
def test_path_text_follows_posixpath(path: str) -> None:
    assert posix_shim.normpath(path) == posixpath.normpath(path)
    assert posix_shim.dirname(path) == posixpath.dirname(path)
    assert posix_shim.basename(path) == posixpath.basename(path)
    assert posix_shim.abspath(path) == posixpath.abspath(path)
    for other in ("b", "/b", "", "b/"):
        assert posix_shim.join(path, other) == posixpath.join(path, other)
        assert posix_shim.join(path, other, "c") == posixpath.join(path, other, "c")


def test_exists_and_isfile_answer_as_os_path(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    for path in (str(tmp_path), str(tmp_path / "f"), str(tmp_path / "none"), "a\x00b"):
        assert posix_shim.exists(path) == os.path.exists(path)
        assert posix_shim.isfile(path) == os.path.isfile(path)


def test_makedirs_makes_parents_and_fails_as_os_makedirs(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "c"
    posix_shim.makedirs(str(target), 0o755, exist_ok=True)
    posix_shim.makedirs(str(target), 0o755, exist_ok=True)
    assert target.is_dir() and target.stat().st_mode & 0o777 == 0o755
    (tmp_path / "f").write_text("")
    for path, exist_ok in ((tmp_path / "f", True), (tmp_path / "a", False),
                           (tmp_path / "f" / "x", True)):
        with pytest.raises(OSError) as ours:
            posix_shim.makedirs(str(path), exist_ok=exist_ok)
        with pytest.raises(OSError) as theirs:
            os.makedirs(str(path), exist_ok=exist_ok)
        assert (type(ours.value), ours.value.errno) == (type(theirs.value), theirs.value.errno)


def test_environment_is_read_as_os_environ_also_after_a_change(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIGHTOS_PROBE", "é-value")
    assert posix_shim.getenv("LIGHTOS_PROBE") == "é-value"
    assert posix_shim.getenv("LIGHTOS_ABSENT") is None
    assert posix_shim.environ_copy() == dict(os.environ)


def test_environment_is_read_without_loading_os() -> None:
    code = (f"import sys; sys.path.insert(0, {PROJECT_ROOT!r}); "
            "from cni_plugin import posix_shim; "
            "print(posix_shim.getenv('LIGHTOS_PROBE'), posix_shim.environ_copy()['LIGHTOS_PROBE'], "
            "'os' in sys.modules)")
    env = {"LIGHTOS_PROBE": "v\udcff", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-IS", "-c", code], env=env, capture_output=True,
                         check=True).stdout
    assert out == b"v\xff v\xff False\n"


@pytest.mark.parametrize(("ending", "status"), [("sys.exit(3)", 3), ("sys.exit(0)", 0),
                                                ("return None", 0)])
def test_run_then_exit_ends_as_sys_exit_with_output_flushed_and_exit_handlers_run(
        ending: str, status: int, tmp_path: Path) -> None:
    marker = tmp_path / "atexit-ran"
    code = (f"import sys; sys.path.insert(0, {PROJECT_ROOT!r})\n"
            "import atexit\n"
            "from cni_plugin.posix_shim import run_then_exit\n"
            "def main():\n"
            f"    atexit.register(lambda: open({str(marker)!r}, 'w').close())\n"
            "    sys.stdout.write('result on stdout')\n"
            "    sys.stderr.write('note on stderr')\n"
            f"    {ending}\n"
            "run_then_exit(main)\n"
            "print('never reached')\n")
    proc = subprocess.run([sys.executable, "-IS", "-c", code], capture_output=True, text=True,
                          check=False)
    assert (proc.returncode, proc.stdout, proc.stderr) == (status, "result on stdout",
                                                           "note on stderr")
    assert marker.exists()
