"""``python -m csi_driver``: flags → config → serve (plus the registrar when asked)."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from csi_driver.cli import parse_config
from csi_driver.config import Config, default_state_dir
from csi_driver.server.endpoint import EndpointError
from csi_driver.server.server import serve
from csi_driver.state.loop_fs import BackendUnavailable
from node_driver_registrar.server import register_when_serving

log = logging.getLogger("csi_driver")


async def _run(cfg: Config) -> None:
    if not (cfg.registration_dir and cfg.serves_node):
        await serve(cfg)
        return
    driver = asyncio.create_task(serve(cfg))
    registrar = asyncio.create_task(register_when_serving(
        Path(cfg.registration_dir), cfg.driver_name, cfg.endpoint, driver))
    try:
        await driver
    finally:
        if not driver.done():
            registrar.cancel()
        # Once the driver stopped, the registrar removes its socket and returns by itself.
        await asyncio.gather(registrar, return_exceptions=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["faults"]:  # the client of a running driver's --fault-control socket
        from csi_driver.fault_client import main as faults_main

        return faults_main(args[1:])
    os.umask(0o077)  # before anything is created: state, data and sockets are private
    cfg = parse_config(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if cfg.state_dir == os.path.abspath(default_state_dir()):
        log.info("state goes to %s (the default; --state-dir chooses another)", cfg.state_dir)
    else:
        log.info("state goes to %s", cfg.state_dir)
    try:
        asyncio.run(_run(cfg))
    except (EndpointError, FileExistsError, BackendUnavailable) as exc:
        print(f"csi-mini-driver: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
