"""lightos gives the exec path what it used from `os`, with the same results and errors."""

from __future__ import annotations

import os
import posixpath
import subprocess
import sys
from pathlib import Path

import pytest

from cni_plugin import lightos
from cni_plugin.install import PROJECT_ROOT

PATHS = ["", "/", "//", "///", "a", "a/", "/a/b/", "//a//b", "///a/./b/../c", "a/../..",
         "../a", "./", "/..", "a/b/../../..", "/var/lib/cni/", "x.y/..."]


@pytest.mark.parametrize("path", PATHS)
def test_path_text_follows_posixpath(path: str) -> None:
    assert lightos.normpath(path) == posixpath.normpath(path)
    assert lightos.dirname(path) == posixpath.dirname(path)
    assert lightos.basename(path) == posixpath.basename(path)
    assert lightos.abspath(path) == posixpath.abspath(path)
    for other in ("b", "/b", "", "b/"):
        assert lightos.join(path, other) == posixpath.join(path, other)
        assert lightos.join(path, other, "c") == posixpath.join(path, other, "c")


def test_exists_and_isfile_answer_as_os_path(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    for path in (str(tmp_path), str(tmp_path / "f"), str(tmp_path / "none"), "a\x00b"):
        assert lightos.exists(path) == os.path.exists(path)
        assert lightos.isfile(path) == os.path.isfile(path)


def test_makedirs_makes_parents_and_fails_as_os_makedirs(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "c"
    lightos.makedirs(str(target), 0o755, exist_ok=True)
    lightos.makedirs(str(target), 0o755, exist_ok=True)
    assert target.is_dir() and target.stat().st_mode & 0o777 == 0o755
    (tmp_path / "f").write_text("")
    for path, exist_ok in ((tmp_path / "f", True), (tmp_path / "a", False),
                           (tmp_path / "f" / "x", True)):
        with pytest.raises(OSError) as ours:
            lightos.makedirs(str(path), exist_ok=exist_ok)
        with pytest.raises(OSError) as theirs:
            os.makedirs(str(path), exist_ok=exist_ok)
        assert (type(ours.value), ours.value.errno) == (type(theirs.value), theirs.value.errno)


def test_environment_is_read_as_os_environ_also_after_a_change(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIGHTOS_PROBE", "é-value")
    assert lightos.getenv("LIGHTOS_PROBE") == "é-value"
    assert lightos.getenv("LIGHTOS_ABSENT") is None
    assert lightos.environ_copy() == dict(os.environ)


def test_environment_is_read_without_loading_os() -> None:
    code = (f"import sys; sys.path.insert(0, {PROJECT_ROOT!r}); "
            "from cni_plugin import lightos; "
            "print(lightos.getenv('LIGHTOS_PROBE'), lightos.environ_copy()['LIGHTOS_PROBE'], "
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
            "from cni_plugin.lightos import run_then_exit\n"
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
