"""Flame graphs as SVG: well-formed, every frame drawn to its share, differences in colour."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from layerbench.analysis import flame
from layerbench.analysis.flame import Profile, from_folded
from layerbench.profiling.perf import fold
from layerbench.report import flamegraph
from layerbench.report.flamegraph import svg

DATA = Path(__file__).parent.parent / "data" / "perf"
NS = "{http://www.w3.org/2000/svg}"
CPP = "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_replace"
DRAWN = 1200 - 2 * flamegraph.PAD  # the width frames share


@pytest.fixture(scope="module")
def fio() -> Profile:
    return from_folded(fold((DATA / "fio-native-1s.perf-script").read_text()))


def frames(document: str) -> dict[str, ET.Element]:
    """Each drawn frame's <g> by its tooltip's frame name (the last one drawn, for repeated names)."""
    root = ET.fromstring(document)
    return {g.findtext(f"{NS}title").split(" — ")[0]: g for g in root.iter(f"{NS}g")}  # type: ignore[union-attr]


def rect(group: ET.Element) -> dict[str, str]:
    found = group.find(f"{NS}rect")
    assert found is not None
    return found.attrib


def rgb(fill: str) -> tuple[int, int, int]:
    match = re.fullmatch(r"rgb\((\d+),(\d+),(\d+)\)", fill)
    assert match, fill
    r, g, b = (int(v) for v in match.groups())
    return r, g, b


def test_every_path_of_the_real_profile_is_one_rect(fio: Profile) -> None:
    root = ET.fromstring(svg(fio, "fio natively"))
    # Every stack's every prefix is a frame, plus "all"; at 154 samples none is under 0.1%.
    paths = {tuple(stack.split(";")[:i]) for stack in fio.stacks for i in range(1, stack.count(";") + 2)}
    assert len(root.findall(f".//{NS}rect")) == len(paths) + 1 == 90


def test_a_frame_is_as_wide_as_its_share(fio: Profile) -> None:
    workload = flame.only(fio, ["fio"])
    drawn = frames(svg(workload, "fio"))
    assert float(rect(drawn["filemap_read_[k]"])["width"]) == pytest.approx(25 / 43 * DRAWN, abs=0.01)
    assert float(rect(drawn["fio"])["width"]) == pytest.approx(DRAWN, abs=0.01)
    tip = drawn["filemap_read_[k]"].findtext(f"{NS}title")
    assert tip == "filemap_read_[k] — 25 samples, 58.14%"


def test_the_root_is_at_the_bottom_and_levels_are_sorted_by_name(fio: Profile) -> None:
    drawn = frames(svg(fio, "fio"))
    assert float(rect(drawn["all"])["y"]) > float(rect(drawn["fio"])["y"]) > float(rect(drawn["__libc_pread"])["y"])
    xs = [float(rect(drawn[comm])["x"]) for comm in ("fio", "kdamond.0", "swapper")]
    assert xs == sorted(xs)


def test_cpp_symbols_are_escaped(fio: Profile) -> None:
    document = svg(fio, "a <b> & 'c'")
    assert CPP in frames(document)  # parsed back whole: the escaping held
    assert ET.fromstring(document).findtext(f"{NS}text") == "a <b> & 'c'"


def test_control_characters_are_left_out() -> None:
    document = svg(from_folded({"a;b\x01c": 3}), "t\x07")
    assert "bc" in frames(document)


def test_narrow_frames_are_left_out() -> None:
    profile = from_folded({"a;wide": 1999, "a;narrow;deeper": 1})  # 0.05%
    drawn = frames(svg(profile, "t"))
    assert set(drawn) == {"all", "a", "wide"}
    assert float(rect(drawn["a"])["width"]) == pytest.approx(DRAWN)  # the parent still counts it


def test_labels_are_cut_to_fit_their_frame() -> None:
    long = "a_very_long_function_name_that_cannot_fit"
    profile = from_folded({f"p;{long}": 15, "p;other": 85})
    group = frames(svg(profile, "t", width=420))[long]
    label = group.findtext(f"{NS}text")
    assert label == "a_very.."
    assert len(label) * flamegraph.CHAR_WIDTH <= float(rect(group)["width"])


def test_kernel_frames_have_their_own_hue(fio: Profile) -> None:
    drawn = frames(svg(fio, "fio"))
    r, _, b = rgb(rect(drawn["vfs_read_[k]"])["fill"])
    assert b > r  # blue-green
    r, _, b = rgb(rect(drawn["__libc_pread"])["fill"])
    assert r > b  # warm
    assert rgb(rect(drawn["fio"])["fill"]) == rgb(rect(drawn["all"])["fill"])  # greys
    assert svg(fio, "fio") == svg(fio, "fio")  # colours are stable, not from Python's salted hash


def test_differential_graph_colours_growth_red_and_shrinkage_blue() -> None:
    base = from_folded({"fio;read;ovl_read_[k]": 10, "fio;read;ext4_[k]": 40, "fio;stat": 50})
    other = from_folded({"fio;read;ovl_read_[k]": 40, "fio;read;ext4_[k]": 40, "fio;stat": 20})
    drawn = frames(svg(other, "container against native", base=base))
    r, g, b = rgb(rect(drawn["ovl_read_[k]"])["fill"])
    assert r > g and r > b  # grew 30 points: the largest change, full red
    assert (r, g, b) == (250, 25, 25)
    r, g, b = rgb(rect(drawn["stat"])["fill"])
    assert b > r and b > g  # shrank 30 points
    assert rgb(rect(drawn["ext4_[k]"])["fill"]) == (250, 250, 250)  # unchanged
    tip = drawn["ovl_read_[k]"].findtext(f"{NS}title")
    assert tip == "ovl_read_[k] — 40 samples, 40.00% (baseline 10.00%, +30.00 points)"


def test_small_changes_stay_pale() -> None:
    base = from_folded({"p;a": 500, "p;b": 500})
    other = from_folded({"p;a": 505, "p;b": 495})  # half a point
    r, g, _ = rgb(rect(frames(svg(other, "t", base=base))["a"])["fill"])
    assert r == 250 and g > 220


def test_a_frame_new_in_the_profile_grows_from_zero() -> None:
    base = from_folded({"p;a": 100})
    other = from_folded({"p;a": 90, "p;a;__seccomp_filter_[k]": 10})
    tip = frames(svg(other, "t", base=base))["__seccomp_filter_[k]"].findtext(f"{NS}title")
    assert tip == "__seccomp_filter_[k] — 10 samples, 10.00% (baseline 0.00%, +10.00 points)"


def test_an_empty_profile_is_still_a_picture() -> None:
    root = ET.fromstring(svg(from_folded({}), "nothing"))
    assert root.findall(f".//{NS}rect") == []
    assert [t.text for t in root.iter(f"{NS}text")] == ["nothing", "no samples"]
