"""Conformance results: one row per case (suite, case, outcome, seconds, the failing call
and what it answered), printed as a table and written as JUnit XML (the standard
library's ElementTree) for CI systems. Each case also keeps its transcript: the
normalised calls it made (what a suite's `Transcriber` hands back between the case's
start and end), which ``--compare-to ours`` sets side by side."""

from __future__ import annotations

import asyncio
import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"


class Skip(Exception):
    """The case does not apply to this target; the message says why."""


def _verdict(err: Exception) -> tuple[str, str]:
    if isinstance(err, Skip):
        return SKIPPED, str(err)
    if isinstance(err, AssertionError):
        return FAILED, str(err)
    return FAILED, f"{type(err).__name__}: {err}"


class Transcriber(Protocol):
    """Where a suite's calls are recorded: a mark now, the normalised steps since one."""

    def mark(self) -> int: ...

    def since(self, mark: int) -> list[str]: ...


@dataclass(frozen=True)
class CaseResult:
    suite: str
    case: str
    outcome: str
    seconds: float
    detail: str = ""
    transcript: tuple[str, ...] = ()  # the normalised calls the case made


@dataclass
class Report:
    focus: str = ""
    skip: str = ""
    results: list[CaseResult] = field(default_factory=list)
    transcriber: Transcriber | None = None  # set by the suite while it runs

    def wanted(self, suite: str, case: str) -> bool:
        name = f"{suite}/{case}"
        if self.focus and not re.search(self.focus, name):
            return False
        return not (self.skip and re.search(self.skip, name))

    def run(self, suite: str, case: str, body: Callable[[], None]) -> CaseResult | None:
        """Run one case (unless --focus/--skip leave it out) and record how it went."""
        async def call() -> None:
            body()
        return asyncio.run(self.arun(suite, case, call))

    async def arun(self, suite: str, case: str,
                   body: Callable[[], Awaitable[None]]) -> CaseResult | None:
        """`run` for a case that is a coroutine."""
        if not self.wanted(suite, case):
            return None
        start = time.monotonic()
        mark = self.transcriber.mark() if self.transcriber is not None else 0
        try:
            await body()
        except Exception as err:  # judged as run() judges it
            outcome, detail = _verdict(err)
        else:
            outcome, detail = PASSED, ""
        transcript = tuple(self.transcriber.since(mark)) if self.transcriber is not None else ()
        result = CaseResult(suite, case, outcome, round(time.monotonic() - start, 3), detail,
                            transcript)
        self.results.append(result)
        return result

    @property
    def failed(self) -> bool:
        return any(r.outcome == FAILED for r in self.results)

    def table(self) -> str:
        rows = [("SUITE", "CASE", "RESULT", "SECONDS", "DETAIL")] + [
            (r.suite, r.case, r.outcome.upper(), f"{r.seconds:.2f}", r.detail.replace("\n", " "))
            for r in self.results]
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        lines = ["  ".join(cell.ljust(widths[i]) if i < 4 else cell
                           for i, cell in enumerate(row)).rstrip() for row in rows]
        counts = {o: sum(r.outcome == o for r in self.results) for o in (PASSED, FAILED, SKIPPED)}
        lines.append(f"{len(self.results)} cases: {counts[PASSED]} passed, "
                     f"{counts[FAILED]} failed, {counts[SKIPPED]} skipped")
        return "\n".join(lines)

    def write_junit(self, path: Path) -> None:
        suites = ET.Element("testsuites")
        for name in dict.fromkeys(r.suite for r in self.results):
            cases = [r for r in self.results if r.suite == name]
            suite = ET.SubElement(suites, "testsuite", name=name, tests=str(len(cases)),
                                  failures=str(sum(r.outcome == FAILED for r in cases)),
                                  skipped=str(sum(r.outcome == SKIPPED for r in cases)),
                                  time=f"{sum(r.seconds for r in cases):.3f}")
            for r in cases:
                case = ET.SubElement(suite, "testcase", classname=name, name=r.case,
                                     time=f"{r.seconds:.3f}")
                if r.outcome == FAILED:
                    ET.SubElement(case, "failure", message=r.detail[:200]).text = r.detail
                elif r.outcome == SKIPPED:
                    ET.SubElement(case, "skipped", message=r.detail)
        ET.ElementTree(suites).write(path, encoding="utf-8", xml_declaration=True)
