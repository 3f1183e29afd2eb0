"""`layerbench serve`'s pages and JSON, through Starlette's TestClient, over three real runs from two hosts
(tests/data/serve/runs.db): the JSON in the CLI's shapes (the same bytes' worth as `show --json` and
`compare --json`), the run's page from the report's own template, hostile names escaped, and every bad
request a clear 4xx with no traceback."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import shutil
import sqlite3
import subprocess
import sys
import warnings
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any

import pytest

with warnings.catch_warnings():  # Starlette 1.10 asks for httpx2 beside httpx, which its TestClient still uses
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from layerbench.analysis.stats import Ratio
from layerbench.cli import serve as serve_cli
from layerbench.records.run import RunRow
from layerbench.report import html, prepared
from layerbench.report.view import cached_view
from layerbench.serve.app import CSP, create_app
from layerbench.serve.history import Point, marked
from layerbench.serve.kept import Texts
from layerbench.serve.source import Source
from layerbench.serve.trend import trend
from layerbench.store.db import Store

DATA = Path(__file__).resolve().parents[1] / "data" / "serve" / "runs.db"
A, B, C = "20261207-062347-3900", "20261207-062429-5952", "20261207-062511-3c86"  # vm, lab-b, vm; oldest first
WRITABLE, VOLUME = "loop/ext4/docker:overlay2/writable-layer", "loop/ext4/docker:overlay2/volume"
NATIVE = "loop/ext4/native/host-dir"
HOSTILE = "<script>alert(1)</script>"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A copy: reading a run writes its cache beside the database."""
    return Path(shutil.copy(DATA, tmp_path / "runs.db"))


@pytest.fixture
def client(db: Path) -> Iterator[TestClient]:
    with TestClient(create_app(Source(str(db))), raise_server_exceptions=False) as c:
        yield c


def cli_json(*args: str) -> Any:
    done = subprocess.run([sys.executable, "-m", "layerbench.cli", *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def nulled(value: Any) -> Any:
    """NaN as null, as the server (and `plain`) writes it."""
    return json.loads(json.dumps(value).replace("NaN", "null"))


def test_runs_list_both_hosts_newest_first_shaped_as_show_json(client: TestClient, db: Path) -> None:
    got = client.get("/api/runs").json()
    assert [r["id"] for r in got["runs"]] == [C, B, A]
    assert {r["host"]["hostname"] for r in got["runs"]} == {"vm", "lab-b"}
    assert (got["total"], got["page"], got["pages"]) == (3, 1, 1)
    shown = cli_json("show", A, "--json", "--db", str(db))["run"]
    assert got["runs"][2] == {k: v for k, v in shown.items() if k != "spec"}
    page = client.get("/").text
    assert all(f'href="/runs/{r}"' in page for r in (A, B, C)) and "lab-b" in page


@pytest.mark.parametrize(
    ("query", "ids"),
    [
        ("host=lab-b", [B]),
        ("host=vm", [C, A]),
        ("preset=serve-capture", [C, B, A]),
        ("preset=quick", []),
        ("layer=overlay2/writable", [C, B, A]),
        ("layer=xfs", []),
        ("since=2026-12-07&until=2026-12-07", [C, B, A]),
        ("until=2026-12-06", []),
        ("host=vm&per_page=1&page=2", [A]),
    ],
)
def test_runs_filters(client: TestClient, query: str, ids: list[str]) -> None:
    assert [r["id"] for r in client.get(f"/api/runs?{query}").json()["runs"]] == ids
    assert client.get(f"/?{query}").status_code == 200


def test_pages_link_older_and_newer(client: TestClient) -> None:
    page = client.get("/?per_page=1&page=2").text
    assert 'rel="prev" href="/?page=1&amp;per_page=1"' in page and 'rel="next" href="/?page=3&amp;per_page=1"' in page
    assert client.get("/api/runs?per_page=2&page=2").json()["pages"] == 2


def test_run_json_is_show_json(client: TestClient, db: Path) -> None:
    assert client.get(f"/api/runs/{B}").json() == nulled(cli_json("show", B, "--json", "--db", str(db)))


def test_run_page_is_the_report_rendered_by_its_own_code(client: TestClient, db: Path, tmp_path: Path) -> None:
    """From its findings to its end the page is `report --html`'s, byte for byte (the figures are the run's
    cached ones, as the CLI's); the site adds its navigation, a compare form and the histories' links."""
    page = client.get(f"/runs/{A}").text
    with contextlib.closing(Store.open(db, create=False)) as store:
        v = cached_view(store, A, latency=True, profiles=True)
        written = html.render(v, tmp_path / "report", draw=lambda v, n: prepared.figures(store, v, n)).read_text()
    body = page[page.index("<h2>") :]
    assert body == written[written.index("<h2>") :]
    assert body.count("<svg") >= 2 and 'id="fig-normalized"' in body and 'id="findings"' in body
    head = page[: page.index("<h2>")]
    assert f'<input type="hidden" name="a" value="{A}">' in head and 'href="/api/runs/' in head
    assert (
        "/history?subject=loop%2Fext4%2Fdocker%3Aoverlay2%2Fvolume&amp;reference=loop%2Fext4%2Fnative%2Fhost-dir"
        in head
    )


def test_compare_json_is_compare_json(client: TestClient, db: Path) -> None:
    got = client.get(f"/api/compare?a={A}&b={B}").json()
    assert got == nulled(cli_json("compare", A, B, "--json", "--db", str(db)))
    assert len(got["cells"]) == 6 and got["regressions"] == []
    page = client.get(f"/compare?a={A}&b={B}").text
    assert page.count('class="history"') == 4  # every cell but the baseline's two links to its history
    assert "lab-b" in page and 'id="compare"' in page


def test_compare_by_metric(client: TestClient) -> None:
    got = client.get(f"/api/compare?a={A}&b={C}&metric=clat_p99").json()
    assert {c["metric"] for c in got["cells"]} <= {"clat_p99"}


def test_history_over_three_runs(client: TestClient) -> None:
    query = f"subject={WRITABLE}&reference={VOLUME}&workload=RW"
    got = client.get(f"/api/history?{query}").json()
    points = got["points"]
    assert [p["run"]["id"] for p in points] == [A, B, C]
    assert got["comparison"] == {"subject": WRITABLE, "reference": VOLUME, "workload": "RW"}
    verdicts = [p["verdict"] for p in points]
    assert [p["verdict_changed"] for p in points] == [False] + [x != y for x, y in itertools.pairwise(verdicts)]
    for p in points:  # not a pair any run prints: judged from its rounds alone, and said so
        assert p["from"] == "pair" and p["metric"] == "iops"
        r = p["ratio"]
        assert r["ci_low"] < r["ratio"] < r["ci_high"]
    page = client.get(f"/history?{query}").text
    assert page.count('<g class="point">') == 3 and page.count('class="changed"') == 2 * sum(
        verdicts[i] != verdicts[i - 1] for i in (1, 2)
    )
    assert client.get(f"/api/history?{query}&host=lab-b").json()["points"][0]["run"]["id"] == B


def test_history_takes_each_runs_own_numbers_where_its_page_shows_the_pair(client: TestClient) -> None:
    got = client.get(f"/api/history?subject={VOLUME}&reference={NATIVE}&workload=RR").json()["points"]
    shown = client.get(f"/api/runs/{B}").json()
    finding = next(f for f in shown["findings"] if (f["subject"], f["workload"]) == (VOLUME, "RR"))
    assert (
        got[1]["from"] == "finding" and got[1]["ratio"] == finding["ratio"] and got[1]["verdict"] == finding["verdict"]
    )


def test_history_of_a_pair_no_run_has(client: TestClient) -> None:
    assert client.get(f"/api/history?subject={WRITABLE}&reference={VOLUME}&workload=SW").json()["points"] == []
    assert 'id="no-points"' in client.get(f"/history?subject={WRITABLE}&reference={VOLUME}&workload=SW").text


@pytest.fixture
def hostile(tmp_path: Path) -> Iterator[TestClient]:
    """The runs renamed by a hostile spec and host: every page must show them as text."""
    path = Path(shutil.copy(DATA, tmp_path / "hostile.db"))
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE runs SET name=?, host_json=json_set(host_json, '$.hostname', ?)", (HOSTILE, HOSTILE))
    conn.close()
    with TestClient(create_app(Source(str(path))), raise_server_exceptions=False) as c:
        yield c


@pytest.mark.parametrize(
    "path",
    ["/", f"/runs/{A}", f"/compare?a={A}&b={B}", f"/history?subject={WRITABLE}&reference={VOLUME}&workload=RW",
     f"/history?subject={HOSTILE}&reference={VOLUME}&workload={HOSTILE}", f"/runs/{A}x"],
)  # fmt: skip
def test_hostile_names_render_as_text(hostile: TestClient, path: str) -> None:
    page = hostile.get(path).text
    assert HOSTILE not in page and "<script" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page or "404" in page


def test_every_response_carries_the_policy(client: TestClient) -> None:
    for path in ("/", f"/runs/{A}", "/api/runs", "/runs/nope", "/nothing", "/?since=x"):
        r = client.get(path)
        assert r.headers["content-security-policy"] == CSP and r.headers["x-content-type-options"] == "nosniff"
    assert "default-src 'self'" in CSP and "script-src 'none'" in CSP


@pytest.mark.parametrize(
    ("path", "status", "said"),
    [
        ("/runs/20991231-000000-0000", 404, "no run '20991231-000000-0000' in this store"),
        ("/api/runs/20991231-000000-0000", 404, "no run '20991231-000000-0000' in this store"),
        ("/runs/%3Cb%3Ex", 400, "run id '<b>x' is not a run id"),
        ("/api/runs/a%20b", 400, "is not a run id"),
        ("/?since=2026-13-01", 400, "since '2026-13-01' is not a date: give YYYY-MM-DD"),
        ("/api/runs?until=yesterday", 400, "until 'yesterday' is not a date"),
        ("/api/runs?since=2026-12-08&until=2026-12-01", 400, "since 2026-12-08 is after until 2026-12-01"),
        ("/api/runs?tag=nightly", 400, "runs have no tags in this store"),
        ("/api/runs?hots=vm", 400, "unknown parameter 'hots': this page takes host, preset"),
        ("/api/runs?host=vm&host=lab-b", 400, "parameter 'host' is given twice"),
        ("/api/runs?page=0", 400, "page '0' is not a whole number from 1"),
        ("/api/runs?per_page=9999", 400, "per_page '9999' is not a whole number from 1 to 500"),
        ("/api/runs?page=4", 400, "page 4 is past the last page (1) of 3 runs"),
        (f"/api/compare?a={A}", 400, "missing b"),
        (f"/api/compare?a={A}&b=20991231-000000-0000", 404, "no run '20991231-000000-0000'"),
        (f"/api/compare?a={A}&b={B}&metric=a;b", 400, "is not a metric's name"),
        ("/api/history?subject=x", 400, "missing reference, workload"),
        (f"/api/history?subject={WRITABLE}&reference={VOLUME}&workload=RW&layer=x", 400, "unknown parameter 'layer'"),
        (f"/runs/{A}?x=1", 400, "unknown parameter 'x'"),
        ("/api/nothing", 404, "no page at /api/nothing"),
    ],
)
def test_bad_requests_are_clear_4xx(client: TestClient, path: str, status: int, said: str) -> None:
    r = client.get(path)
    assert r.status_code == status
    text = r.json()["error"] if path.startswith("/api/") else unescape(r.text)
    assert said in text and "Traceback" not in r.text


def test_only_get(client: TestClient) -> None:
    for method in ("post", "put", "delete"):
        r = getattr(client, method)("/api/runs")
        assert r.status_code == 405 and r.json()["error"] == "this server only reads: GET only"


def test_the_store_is_not_written(client: TestClient, db: Path) -> None:
    before = db.read_bytes()
    for path in (
        "/",
        f"/runs/{A}",
        f"/compare?a={A}&b={C}",
        f"/history?subject={VOLUME}&reference={NATIVE}&workload=RW",
    ):
        assert client.get(path).status_code == 200
    assert db.read_bytes() == before


def test_serve_refuses_a_missing_store(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "layerbench.cli", "serve", "--db", str(tmp_path / "none.db"), "--port", "1"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 6 and "no results database at" in done.stderr and "none.db" in done.stderr


def point(day: int, ratio: float, low: float, high: float, verdict: str) -> Point:
    run = RunRow(f"2026120{day}-000000-0000", "p", 1796601600.0 + day * 86400, None, "finished", {}, "", {}, 0)
    return Point(run, "iops", Ratio(ratio, low, high, 0.01), verdict, "", "pair", 0.95)


def test_a_verdict_that_changes_is_marked_and_drawn() -> None:
    points = marked(
        [point(1, 1.0, 0.97, 1.03, "equivalent"), point(2, 0.7, 0.6, 0.8, "slower"), point(3, 0.72, 0.5, 1.1, "slower"),
         point(4, float("nan"), float("nan"), float("nan"), "undecided")]
    )  # fmt: skip
    assert [p.changed for p in points] == [False, True, False, True]
    drawn = trend(points)
    assert drawn is not None and [m.changed for m in drawn.marks] == [False, True, False]  # no ratio: not drawn
    first, second, third = drawn.marks
    assert second.y > drawn.one > drawn.top  # slower: below the line of 1 (SVG's y grows downwards)
    assert first.high is not None and first.low is not None and second.high is not None and second.low is not None
    assert drawn.band[0] < first.high < first.y < first.low < drawn.band[1]  # inside the ±5% band
    assert second.high < second.y < second.low and first.x < second.x < third.x
    assert (
        drawn.top <= min(m.high or m.y for m in drawn.marks) and max(m.low or m.y for m in drawn.marks) <= drawn.bottom
    )
    assert trend(points[3:]) is None


@pytest.mark.parametrize(
    ("host", "local"),
    [("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("localhost", True), ("0.0.0.0", False),
     ("192.168.1.5", False), ("::", False), ("lab-b", False)],
)  # fmt: skip
def test_only_loopback_is_local(host: str, local: bool) -> None:
    assert serve_cli._local(host) is local


def test_a_run_read_again_from_its_cache(db: Path) -> None:
    """A second server reads the run back from its cache, whose cells and trials are read from the store when
    first used: read while the request's store is open, and then kept in memory for the next request."""
    paths = (
        f"/runs/{C}",
        f"/api/runs/{C}",
        f"/compare?a={C}&b={A}",
        f"/history?subject={VOLUME}&reference={NATIVE}&workload=RR",
    )
    with TestClient(create_app(Source(str(db))), raise_server_exceptions=False) as first:
        said = [first.get(path).text for path in paths]
    with TestClient(create_app(Source(str(db))), raise_server_exceptions=False) as again:
        for path, text in zip(paths, said, strict=True):
            for _ in range(2):
                r = again.get(path)
                assert r.status_code == 200 and r.text == text


def test_kept_texts_follow_the_run(db: Path) -> None:
    """A finished run's text is built once and kept; a run resumed since (another end) is built again; a run
    still running is never kept; another list of runs to compare with is another text; the oldest goes first."""
    built: list[str] = []
    texts = Texts(size=2)
    with contextlib.closing(Store.open(db, create=False)) as store:
        run = store.run(A)

    def build() -> str:
        built.append(run.id)
        return f"page {len(built)}"

    first = texts.text(run, "page", build)
    assert texts.text(run, "page", build) == first == "page 1"
    assert texts.text(run, "other runs", build) == "page 2"
    assert texts.text(dataclasses.replace(run, finished_at=(run.finished_at or 0) + 1), "page", build) == "page 3"
    running = dataclasses.replace(run, status="running")
    assert [texts.text(running, "page", build) for _ in range(2)] == ["page 4", "page 5"]
    assert len(texts.kept) == 2 and texts.text(run, "page", build) == "page 6"  # evicted by the two since


def test_an_interval_is_printed_with_the_digits_its_verdict_needs() -> None:
    from layerbench.serve.site import interval

    assert interval(Ratio(0.95, 0.9, 0.99996, 0.01)) == "0.900–0.99996"  # not "1.000": it lies below ×1
    assert interval(Ratio(1.0, 0.98, 1.02, 0.9)) == "0.980–1.020"
