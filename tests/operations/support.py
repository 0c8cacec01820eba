"""Helpers of the operations tests: scraping and reading Prometheus' text format."""

from __future__ import annotations

import shutil
import subprocess

from prometheus_client.parser import text_string_to_metric_families

from tests.support import HTTP

PROMTOOL = shutil.which("promtool")


def scrape(url: str, token: str | None = None) -> str:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    response = HTTP.get(url, headers=headers, timeout=10)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return response.text


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition, by (name, sorted labels); parsing it checks the format."""
    found: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(text: str, name: str, **labels: str) -> float:
    """The sum of the samples of ``name`` whose labels include ``labels``."""
    total = 0.0
    for (found, have), v in samples(text).items():
        if found == name and all((k, w) in have for k, w in labels.items()):
            total += v
    return total


def check_with_promtool(text: str) -> None:
    """``promtool check metrics`` (Debian's prometheus package) when installed: names, units,
    ``_total`` counters; the client library's parser (above) otherwise."""
    samples(text)
    if PROMTOOL is None:
        return
    done = subprocess.run(
        [PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stdout + done.stderr
