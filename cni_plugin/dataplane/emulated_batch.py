"""The steps of one emulated command (``with dataplane.batch():``), written together.

Each step is tried when asked for on a view holding the files of its scope (read as
first needed), so it fails where, and as, it would alone; when the block ends every
step runs again on the fresh files of all their scopes in ONE transaction.
"""

from __future__ import annotations

from cni_plugin.dataplane.base import StepGroup

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    from cni_plugin.dataplane.emulated import EmulatedDataplane
    from cni_plugin.dataplane.shards import Scope

    T = TypeVar("T")
    Step = Callable[[dict[str, Any]], Any]


class Batch(StepGroup):
    """The steps of one command: tried on a view as asked for, written together."""

    all_or_nothing = True

    def __init__(self, dataplane: EmulatedDataplane) -> None:
        self.dataplane = dataplane
        self.view: dict[str, Any] = {}
        self.loaded: set[str] = set()
        self.scope: Scope = []
        self.steps: list[Step] = []

    def apply(self, step: Callable[[dict[str, Any]], T], scope: Scope) -> T:
        """Try `step` on the view (with the files of its scope) and keep it for the end."""
        self.dataplane.state.extend(self.view, self.loaded, scope)
        self.scope.extend(scope)
        result = step(self.view)
        self.steps.append(step)
        return result

    def __enter__(self) -> None:
        if self.dataplane._batch is not None:
            raise RuntimeError("dataplane batches do not nest")
        self.dataplane._batch = self

    def __exit__(self, *exc: object) -> None:
        self.dataplane._batch = None
        if exc[0] is not None or not self.steps:
            return  # dropped: nothing of this command was written
        # Other commands may have written since the view was read: every step runs again
        # on the fresh state and raises as it would have alone (then nothing is written).
        with self.dataplane.state.transaction(self.scope) as state:
            for step in self.steps:
                step(state)
