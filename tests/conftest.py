"""Session-wide setup: every test runs in a private mount namespace when root.

Entered when this file is imported: pytest imports it before any other conftest
and before any test module, so every skip condition and every process sees it."""

from __future__ import annotations

from tests.mount_namespace import enter_private

enter_private()
