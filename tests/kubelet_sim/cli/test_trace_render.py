"""``python -m kubelet_sim trace FILE.jsonl``: a real ``--trace-file`` of scenario 6 drawn as
an SVG sequence diagram (well-formed, lanes in order, one arrow per call, failures red),
cut to one pod, and as Mermaid; the SVG also seen through headless Chromium."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import tempfile
import zlib
from collections import Counter
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from kubelet_sim.trace_render import events_for_pod, read_trace
from kubelet_sim.trace_svg import INK, RED

PROJECT_ROOT = Path(__file__).resolve().parents[3]
SVG = "{http://www.w3.org/2000/svg}"
CHROMIUM = Path("/usr/bin/chromium")
SCENARIO_6_LANES = [
    ("controller", ""), ("external-provisioner", ""), ("external-attacher", ""),
    ("kubelet", "node-1"), ("containerd", "node-1"), ("CSI controller plugin", ""),
    ("CSI node plugin", "node-1"), ("node-driver-registrar", "node-1"), ("emu-bridge", ""),
    ("emu-loopback", "")]


def run_trace(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kubelet_sim", "trace", *map(str, args)],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60,
                          check=False)


def event(seq: int, component: str, call: str, result: str = "OK", *,
          node: str = "node-1", **request: Any) -> dict[str, Any]:
    return {"phase": "apply", "seq": seq, "ts": seq / 10, "node": node,
            "component": component, "call": call, "request": request, "result": result,
            "duration_ms": 1.0}


def write_trace(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


@pytest.fixture(scope="module")
def scenario_6(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The --trace-file of ``demo 6``, start-up included."""
    trace_file = tmp_path_factory.mktemp("trace") / "scenario-6.jsonl"
    demo = subprocess.run([sys.executable, "-m", "kubelet_sim", "demo", "6", "--no-trace",
                           "--trace-file", str(trace_file)], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    return trace_file


def render(trace_file: Path, out: Path, *args: str) -> ElementTree.Element:
    result = run_trace(trace_file, "--svg", out, *args)
    assert result.returncode == 0, result.stderr
    return ElementTree.parse(out).getroot()  # raises unless well-formed


def lanes(svg: ElementTree.Element) -> list[tuple[str, str]]:
    """(title, node) of each lane, left to right by its lifeline."""
    found = []
    for g in svg.iter(f"{SVG}g"):
        lifeline = g.find(f"{SVG}line")
        if g.get("class") == "lane" and lifeline is not None:
            found.append((float(lifeline.attrib["x1"]), g.attrib["data-title"],
                          g.attrib["data-node"]))
    return [(title, node) for _, title, node in sorted(found)]


def calls(svg: ElementTree.Element) -> list[ElementTree.Element]:
    return [g for g in svg.iter(f"{SVG}g") if (g.get("class") or "").startswith("call ")]


def label(call: ElementTree.Element) -> str:
    return "".join(t.text or "" for t in call.iter(f"{SVG}text") if t.get("class") != "seq")


def test_scenario_6_is_a_well_formed_svg_with_its_lanes_in_order(
    scenario_6: Path, tmp_path: Path,
) -> None:
    svg = render(scenario_6, tmp_path / "s6.svg")

    assert svg.tag == f"{SVG}svg"
    assert lanes(svg) == SCENARIO_6_LANES
    assert float(svg.attrib["width"]) > 800 and float(svg.attrib["height"]) > 400


def test_every_event_of_the_trace_is_one_arrow_in_trace_order(
    scenario_6: Path, tmp_path: Path,
) -> None:
    events = [json.loads(line) for line in scenario_6.read_text().splitlines()]
    arrows = calls(render(scenario_6, tmp_path / "s6.svg"))

    assert len(arrows) == len(events)
    assert [(a.attrib["data-phase"], int(a.attrib["data-seq"])) for a in arrows] == \
        [(e["phase"], e["seq"]) for e in events]


def test_arrow_labels_name_the_rpc_or_cni_verb_and_its_result(
    scenario_6: Path, tmp_path: Path,
) -> None:
    labels = [label(a) for a in calls(render(scenario_6, tmp_path / "s6.svg"))]

    assert "NodeStageVolume → OK" in labels
    assert "NodePublishVolume → OK" in labels
    assert labels.count("ADD → OK") == 2  # emu-loopback, then emu-bridge
    assert labels.index("NodePublishVolume → OK") < labels.index("ADD → OK")


def test_a_failed_call_and_its_retry_are_red_and_text_is_escaped(tmp_path: Path) -> None:
    trace_file = write_trace(tmp_path / "t.jsonl", [
        event(1, "kubelet", "csi.Node/NodeStageVolume", "UNAVAILABLE: <injected> & \"x\"",
              volume_id="v1"),
        event(2, "kubelet", "csi.Node/NodeStageVolume", volume_id="v1"),
        event(3, "kubelet", "csi.Node/NodePublishVolume", volume_id="v1"),
    ])
    failed, retry, ok = calls(render(trace_file, tmp_path / "t.svg"))

    assert [c.attrib["class"] for c in (failed, retry, ok)] == \
        ["call failed", "call retry", "call ok"]
    assert label(failed) == "NodeStageVolume → UNAVAILABLE: <injected> & \"x\""
    assert label(retry) == "NodeStageVolume → OK (retry)"
    for call, colour in ((failed, RED), (retry, RED), (ok, INK)):
        line = call.find(f"{SVG}line")
        assert line is not None and line.attrib["stroke"] == colour
    assert "&lt;injected&gt; &amp;" in (tmp_path / "t.svg").read_text()


def test_pod_filter_keeps_the_calls_for_the_pods_volume_and_sandbox(
    scenario_6: Path, tmp_path: Path,
) -> None:
    shop = calls(render(scenario_6, tmp_path / "shop.svg", "--pod", "default/shop"))
    other = render(scenario_6, tmp_path / "other.svg", "--pod", "default/other")

    assert [label(c) for c in shop] == [
        "CreateVolume → OK", "ControllerPublishVolume → OK", "NodeStageVolume → OK",
        "NodePublishVolume → OK", "ADD → OK", "ADD → OK"]
    assert calls(other) == [] and lanes(other) == []


def test_pod_filter_follows_a_pods_uid_volume_and_sandbox_to_its_teardown(
    tmp_path: Path,
) -> None:
    publish_context = {"csi.storage.k8s.io/pod.namespace": "ns",
                       "csi.storage.k8s.io/pod.name": "a", "csi.storage.k8s.io/pod.uid": "u-a"}
    target = "/k/pods/u-a/volumes/kubernetes.io~csi/pv-a/mount"
    trace_file = write_trace(tmp_path / "t.jsonl", [
        event(1, "external-provisioner", "csi.Controller/CreateVolume", name="pv-a"),
        event(2, "external-provisioner", "csi.Controller/CreateVolume", name="pv-b"),
        event(3, "kubelet", "csi.Node/NodeStageVolume", volume_id="vol-a"),
        event(4, "kubelet", "csi.Node/NodePublishVolume", volume_id="vol-a",
              target_path=target, volume_context=publish_context),
        event(5, "containerd", "cni ADD emu-bridge", container_id="s-a", pod="ns/a"),
        event(6, "containerd", "cni ADD emu-bridge", container_id="s-b", pod="ns/b"),
        event(7, "kubelet", "runtime.v1.RuntimeService/StopPodSandbox", pod_sandbox_id="s-a"),
        event(8, "kubelet", "csi.Node/NodeUnpublishVolume", target_path=target),
        event(9, "external-attacher", "csi.Controller/ControllerUnpublishVolume",
              volume_id="vol-a", node_id="node-1"),
    ])

    kept = events_for_pod(read_trace(trace_file), "ns", "a")

    assert [e.seq for e in kept] == [1, 3, 4, 5, 7, 8, 9]


def test_mermaid_has_the_participants_in_lane_order_and_a_message_per_call(
    scenario_6: Path,
) -> None:
    result = run_trace(scenario_6, "--mermaid")
    lines = result.stdout.splitlines()

    assert result.returncode == 0, result.stderr
    assert lines[0] == "sequenceDiagram"
    participants = [line.split(" as ", 1)[1] for line in lines if " participant " in line]
    assert [p.split(" (")[0] for p in participants] == [t for t, _ in SCENARIO_6_LANES]
    messages = [line.strip() for line in lines if "->>" in line or "-x" in line]
    assert len(messages) == len(scenario_6.read_text().splitlines())
    assert "kubelet_node_1->>CSI_node_plugin_node_1: NodeStageVolume → OK" in messages
    assert "containerd_node_1->>emu_loopback: ADD → OK" in messages


def test_mermaid_to_a_file_draws_a_failure_as_a_cross(tmp_path: Path) -> None:
    trace_file = write_trace(tmp_path / "t.jsonl", [
        event(1, "containerd", "cni ADD emu-bridge", "code 11: no IP; #1", container_id="c")])

    result = run_trace(trace_file, "--mermaid", tmp_path / "t.mmd")

    assert result.returncode == 0 and result.stdout == ""
    assert "containerd_node_1-xemu_bridge: ADD → code 11: no IP#59; #35;1" in \
        (tmp_path / "t.mmd").read_text().splitlines()[-1]


@pytest.mark.parametrize(("content", "message"), [
    (None, "cannot read"),
    ('{"phase": "x", "seq": 1}\n', ":1: not a trace event"),
    ("\nnot json\n", ":2: not a trace event (not JSON)"),
])
def test_an_unreadable_file_or_a_line_that_is_not_an_event_exits_2(
    tmp_path: Path, content: str | None, message: str,
) -> None:
    trace_file = tmp_path / "t.jsonl"
    if content is not None:
        trace_file.write_text(content)

    result = run_trace(trace_file, "--svg", tmp_path / "t.svg")

    assert result.returncode == 2
    assert message in result.stderr and str(trace_file) in result.stderr
    assert not (tmp_path / "t.svg").exists()


def png_colours(data: bytes) -> Counter[tuple[int, int, int]]:
    """How many pixels of each RGB colour an 8-bit RGB or RGBA PNG has."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour_type = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour_type in (2, 6) and header[12] == 0  # not interlaced
    bpp = 3 if colour_type == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    colours: Counter[tuple[int, int, int]] = Counter()
    previous = bytearray(stride)
    for row in range(height):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride if kind else 0):
            left = line[i - bpp] if i >= bpp else 0
            up, corner = previous[i], previous[i - bpp] if i >= bpp else 0
            if kind == 4:
                p = left + up - corner
                guess = min((abs(p - left), 0, left), (abs(p - up), 1, up),
                            (abs(p - corner), 2, corner))[2]
            else:
                guess = {1: left, 2: up, 3: (left + up) // 2}[kind]
            line[i] = (line[i] + guess) & 0xFF
        colours.update(zip(line[0::bpp], line[1::bpp], line[2::bpp], strict=True))
        previous = line
    return colours


def screenshot(svg: Path) -> Counter[tuple[int, int, int]]:
    """The colours of headless Chromium's screenshot of ``svg`` (a fresh profile)."""
    png = svg.with_suffix(".png")
    with tempfile.TemporaryDirectory() as profile:
        shot = subprocess.run([
            str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", f"--user-data-dir={profile}", f"--screenshot={png}",
            "--window-size=1600,1200", svg.as_uri()],
            capture_output=True, text=True, timeout=120, check=False)
    assert shot.returncode == 0 and png.exists(), shot.stderr[-2000:]
    return png_colours(png.read_bytes())


needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="needs Debian's chromium at /usr/bin/chromium (make system-deps installs it)")


@needs_chromium
def test_headless_chromium_draws_scenario_6_as_more_than_a_blank_page(
    scenario_6: Path, tmp_path: Path,
) -> None:
    render(scenario_6, tmp_path / "s6.svg")

    colours = screenshot(tmp_path / "s6.svg")

    assert len(colours) > 1
    assert colours.most_common(1)[0][0] == (255, 255, 255)  # the background
    dark = sum(n for (r, g, b), n in colours.items() if max(r, g, b) < 80)
    assert dark > 1000  # arrows, labels and lane titles in ink


@needs_chromium
def test_headless_chromium_draws_a_failed_call_in_red(tmp_path: Path) -> None:
    trace_file = write_trace(tmp_path / "t.jsonl", [
        event(1, "kubelet", "csi.Node/NodeStageVolume", "UNAVAILABLE: down", volume_id="v"),
        event(2, "kubelet", "csi.Node/NodeStageVolume", volume_id="v")])
    render(trace_file, tmp_path / "t.svg")

    colours = screenshot(tmp_path / "t.svg")

    assert sum(n for (r, g, b), n in colours.items() if r > 150 and g < 90 and b < 90) > 100
