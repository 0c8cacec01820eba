"""Draw the Grafana dashboard's panels from live scrapes of a real server and daemon.

Not Grafana: a stand-in to show what ``docs/grafana-dashboard.json`` charts, with real data.
It starts ``backfiller serve`` and ``backfiller daemon --metrics-port`` on a temporary SQLite
database with the test jobs, launches backfills (steady, flaky, broken, and launches refused
with userErrors), scrapes both ``/metrics`` every ``STEP`` seconds for ``SECONDS``, evaluates
each panel's expression in a simplified way (rates between consecutive scrapes, quantiles
from histogram buckets over ``WINDOW`` seconds), and writes an HTML page of SVG charts. With
``--screenshot``, Debian's ``chromium`` renders it to ``docs/grafana-dashboard.png``.

``python -m bench.dashboard_preview [--screenshot]``
"""

from __future__ import annotations

import argparse
import html
import itertools
import math
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

REPO = Path(__file__).resolve().parent.parent
DEFS = "tests.defs.jobs_daemon:definitions"
STEP = 2.0
SECONDS = 60.0
WINDOW = 10.0
Sample = dict[tuple[str, tuple[tuple[str, str], ...]], float]
LAUNCH = """mutation($input: LaunchBackfillInput!) { launchBackfill(input: $input) {
  backfill { id } userErrors { code } } }"""


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def parse(text: str) -> Sample:
    found: Sample = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            found[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return found


def summed(sample: Sample, name: str, by: str | None, **match: str) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for (n, labels), v in sample.items():
        d = dict(labels)
        if n == name and all(d.get(k) == w for k, w in match.items()):
            out[d.get(by, "") if by else name] += v
    return out


def rate(
    series: list[tuple[float, Sample]], name: str, by: str | None, **m: str
) -> dict[str, list[tuple[float, float]]]:
    lines: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for (t0, s0), (t1, s1) in itertools.pairwise(series):
        a, b = summed(s0, name, by, **m), summed(s1, name, by, **m)
        for key in set(a) | set(b):
            lines[key].append((t1, max(0.0, b.get(key, 0.0) - a.get(key, 0.0)) / (t1 - t0)))
    return lines


def gauge(
    series: list[tuple[float, Sample]], name: str, by: str | None, label: Callable[[str], str] = str
) -> dict[str, list[tuple[float, float]]]:
    lines: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for t, s in series:
        for key, v in summed(s, name, by).items():
            lines[label(key)].append((t, v))
    return lines


def quantile(
    series: list[tuple[float, Sample]], name: str, q: float, by: str | None = None, **m: str
) -> dict[str, list[tuple[float, float]]]:
    lines: dict[str, list[tuple[float, float]]] = defaultdict(list)
    steps = max(1, int(WINDOW / STEP))
    for i in range(steps, len(series)):
        (_, old), (t, new) = series[i - steps], series[i]
        groups: dict[str, dict[float, float]] = defaultdict(dict)
        for (n, labels), v in new.items():
            d = dict(labels)
            if n != f"{name}_bucket" or not all(d.get(k) == w for k, w in m.items()):
                continue
            le = float(d["le"])
            groups[d.get(by, "") if by else f"p{int(q * 100)}"][le] = v - old.get((n, labels), 0.0)
        for key, buckets in groups.items():
            ordered = sorted(buckets.items())
            total = ordered[-1][1] if ordered else 0.0
            if total <= 0:
                continue
            rank, prev_le, prev_count = q * total, 0.0, 0.0
            for le, count in ordered:
                if count >= rank:
                    if math.isinf(le):
                        value = prev_le
                    else:
                        value = prev_le + (le - prev_le) * (rank - prev_count) / max(
                            count - prev_count, 1e-9
                        )
                    lines[key].append((t, value))
                    break
                prev_le, prev_count = le, count
    return lines


TEXT = 'fill="#9fa7b3" font-size="10"'
COLORS = ["#73bf69", "#f2cc0c", "#8ab8ff", "#ff780a", "#f2495c", "#5794f2", "#b877d9", "#fade2a"]


def svg(lines: dict[str, list[tuple[float, float]]], t0: float, unit: str) -> str:
    width, height, pad = 560, 210, 44
    points = [p for line in lines.values() for p in line]
    top = max([v for _, v in points] + [1e-9]) * 1.1
    span = SECONDS

    def x(t: float) -> float:
        return pad + (t - t0) / span * (width - pad - 10)

    def y(v: float) -> float:
        return height - 24 - v / top * (height - 40)

    parts = [f'<svg width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg">']
    for i in range(5):
        v = top * i / 4
        parts.append(
            f'<line x1="{pad}" x2="{width - 10}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#2c3235"/>'
        )
        label = f"{v * 1000:.0f} ms" if unit == "s" and top < 2 else f"{v:.3g}"
        parts.append(
            f'<text x="{pad - 4}" y="{y(v) + 4:.1f}" {TEXT} text-anchor="end">{label}</text>'
        )
    for i in range(0, int(span) + 1, 10):
        parts.append(
            f'<text x="{x(t0 + i):.1f}" y="{height - 6}" {TEXT} text-anchor="middle">{i}s</text>'
        )
    legend = []
    for i, (key, line) in enumerate(sorted(lines.items())):
        color = COLORS[i % len(COLORS)]
        if line:
            path = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in line)
            parts.append(
                f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{path}"/>'
            )
        legend.append(f'<span style="color:{color}">&#9632;</span> {html.escape(key)}')
    parts.append("</svg>")
    return "".join(parts) + f'<div class="legend">{" &nbsp; ".join(legend)}</div>'


def panels(
    server: list[tuple[float, Sample]], daemon: list[tuple[float, Sample]]
) -> list[tuple[str, str, dict[str, list[tuple[float, float]]]]]:
    launch = {"operation": "launchBackfill"}
    dispatch_p50 = quantile(daemon, "backfiller_daemon_dispatch_latency_seconds", 0.5)
    dispatch_p99 = quantile(daemon, "backfiller_daemon_dispatch_latency_seconds", 0.99)
    return [
        (
            "Runs per second, by what happened",
            "ops",
            rate(daemon, "backfiller_daemon_runs_total", "event"),
        ),
        (
            "Launches per second, by outcome",
            "ops",
            rate(server, "backfiller_api_operations_total", "outcome", **launch),
        ),
        (
            "launchBackfill latency",
            "s",
            {
                **quantile(server, "backfiller_api_operation_duration_seconds", 0.5, **launch),
                **quantile(server, "backfiller_api_operation_duration_seconds", 0.99, **launch),
            },
        ),
        (
            "Claim and dispatch latency",
            "s",
            {
                "claim to start p50": dispatch_p50.get("p50", []),
                "claim to start p99": dispatch_p99.get("p99", []),
                "claim p99": quantile(daemon, "backfiller_daemon_claim_duration_seconds", 0.99).get(
                    "p99", []
                ),
            },
        ),
        (
            "Partitions of unfinished backfills",
            "short",
            gauge(daemon, "backfiller_active_partitions", "state"),
        ),
        (
            "Backfills by status",
            "short",
            {
                k: v
                for k, v in gauge(daemon, "backfiller_backfills", "status").items()
                if any(val for _, val in v)
            },
        ),
        (
            "Run failures per second, by reason",
            "ops",
            rate(daemon, "backfiller_daemon_run_failures_total", "reason"),
        ),
        (
            "userErrors per second, by code",
            "ops",
            rate(server, "backfiller_api_user_errors_total", "code"),
        ),
        (
            "Daemon task duration p99",
            "s",
            quantile(daemon, "backfiller_daemon_task_duration_seconds", 0.99, by="task"),
        ),
    ]


def page(rendered: list[tuple[str, str, dict[str, list[tuple[float, float]]]]], t0: float) -> str:
    cells = "".join(
        f'<div class="panel"><h3>{html.escape(title)}</h3>{svg(lines, t0, unit)}</div>'
        for title, unit, lines in rendered
    )
    return f"""<!doctype html><html><head><meta charset="utf-8"><style>
body {{ background:#111217; color:#ccccdc; font-family:sans-serif; margin:12px; }}
h1 {{ font-size:18px; margin:4px 0 2px; }}
p.note {{ color:#9fa7b3; font-size:12px; margin:0 0 10px; }}
.grid {{ display:grid; grid-template-columns:repeat(3, 580px); gap:8px; }}
.panel {{ background:#181b1f; border:1px solid #2c3235; padding:6px 8px; }}
h3 {{ font-size:13px; margin:0 0 4px; font-weight:500; }}
.legend {{ font-size:11px; color:#ccccdc; }}
</style></head><body><h1>Backfiller (preview of docs/grafana-dashboard.json)</h1>
<p class="note">Drawn by bench/dashboard_preview.py from live /metrics scrapes of a real
server and daemon (every {STEP:g} s for {SECONDS:g} s, SQLite, 2 workers), not by Grafana;
rates between scrapes, quantiles over {WINDOW:g} s of histogram buckets.</p>
<div class="grid">{cells}</div></body></html>"""


def backfiller(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "backfiller", *args],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def wait_healthy(url: str) -> None:
    for _ in range(600):
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"{url} did not answer")


def scrape(url: str) -> Sample:
    return parse(httpx.get(url, timeout=10).text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--screenshot", action="store_true")
    parser.add_argument("--output", default=str(REPO / "docs" / "grafana-dashboard.png"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dashboard-") as tmp:
        db = f"sqlite:///{Path(tmp) / 'db.sqlite'}"
        port, metrics = free_port(), free_port()
        api = f"http://127.0.0.1:{port}"
        server = backfiller(
            "serve", "--database", db, "--definitions", DEFS, "--auth", "none", "--port", str(port)
        )
        wait_healthy(f"{api}/healthz")  # it creates the database: the daemon comes after
        daemon = backfiller(
            "daemon",
            "--database",
            db,
            "--definitions",
            DEFS,
            "--workers",
            "2",
            "--metrics-port",
            str(metrics),
        )
        try:
            wait_healthy(f"http://127.0.0.1:{metrics}/healthz")

            def launch(job: str, start: str, end: str, **extra: object) -> None:
                variables = {
                    "input": {
                        "target": {"job": job},
                        "partitions": {"range": {"start": start, "end": end}},
                        **extra,
                    }
                }
                httpx.post(
                    f"{api}/graphql/v1", json={"query": LAUNCH, "variables": variables}, timeout=30
                )

            plan = {
                4: lambda: launch(
                    "steady", "2001-01-01", "2001-12-31", runConfig={"seconds": 0.05}
                ),
                12: lambda: launch("flaky", "2002-01-01", "2002-03-31"),
                20: lambda: launch("broken", "2003-01-01", "2003-01-20"),
                26: lambda: [launch("nope", "2001-01-01", "2001-01-02") for _ in range(5)],
                30: lambda: [launch("steady", "2001-01-02", "2001-01-01") for _ in range(3)],
                36: lambda: launch(
                    "steady", "2004-01-01", "2004-06-30", runConfig={"seconds": 0.02}
                ),
            }
            server_series: list[tuple[float, Sample]] = []
            daemon_series: list[tuple[float, Sample]] = []
            t0 = time.monotonic()
            step = 0
            while (now := time.monotonic()) - t0 <= SECONDS:
                for at in [a for a in plan if a <= now - t0]:
                    plan.pop(at)()
                server_series.append((now, scrape(f"{api}/metrics")))
                daemon_series.append((now, scrape(f"http://127.0.0.1:{metrics}/metrics")))
                step += 1
                time.sleep(max(0.0, t0 + step * STEP - time.monotonic()))
        finally:
            for process in (daemon, server):
                process.terminate()
                process.wait(20)
    out = Path(args.output).with_suffix(".html")
    out = Path(tempfile.gettempdir()) / out.name
    out.write_text(page(panels(server_series, daemon_series), t0))
    print(f"wrote {out}")
    if args.screenshot:
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        if chromium is None:
            raise SystemExit("chromium is not installed")
        subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--screenshot={args.output}",
                "--window-size=1790,900",
                out.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
