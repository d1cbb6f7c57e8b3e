"""``python -m csi_driver``: flags → config → serve."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Sequence

from csi_driver.cli import parse_config
from csi_driver.endpoint import EndpointError
from csi_driver.server import serve


def main(argv: Sequence[str] | None = None) -> int:
    cfg = parse_config(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(serve(cfg))
    except EndpointError as exc:
        print(f"csi-mini-driver: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
