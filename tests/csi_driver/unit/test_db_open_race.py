"""Several driver processes opening one new state database at the same moment all
succeed (the controller and node plugins of a cluster start together)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

OPENER = """
import sys, time
from pathlib import Path
go = Path(sys.argv[2])
while not go.exists():
    time.sleep(0.001)
from csi_driver.state.db import open_connection
conn = open_connection(sys.argv[1])
conn.execute("CREATE TABLE IF NOT EXISTS t (x)")
print(conn.execute("PRAGMA journal_mode").fetchone()[0])
"""


def test_processes_opening_a_new_database_at_once_all_get_wal(tmp_path: Path) -> None:
    project = Path(__file__).resolve().parents[3]
    for round_no in range(5):
        db, go = tmp_path / f"state-{round_no}.db", tmp_path / f"go-{round_no}"
        procs = [subprocess.Popen([sys.executable, "-c", OPENER, str(db), str(go)],
                                  cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for _ in range(6)]
        time.sleep(0.3)  # let every process reach the starting line
        go.touch()
        results = [p.communicate(timeout=60) for p in procs]
        assert [p.returncode for p in procs] == [0] * 6, [err for _, err in results]
        assert all(out.strip() == b"wal" for out, _ in results)
