"""tests/skip_policy.py, in a pytest session of its own (pytester): on CI a skip fails unless
tests/unavoidable_skips.py names it; the named ones are listed at the end; elsewhere skips stay skips."""

from __future__ import annotations

import pytest

from tests import skip_policy, unavoidable_skips
from tests.conftest import REQUIREMENTS
from tests.unavoidable_skips import UNAVOIDABLE, named, tagged

pytest_plugins = ["pytester"]

SUITE = f"""
import pytest

def test_passes():
    pass

@pytest.mark.skip(reason="needs fio (apt-get install fio); missing here: fio")
def test_marker_skip():
    pass

def test_skip_in_the_body():
    pytest.skip("PostgreSQL is not installed here")

def test_skip_the_machine_cannot_avoid():
    pytest.skip({tagged("netem", "a remote device over nbd-fuse(+2ms): this kernel has no netem qdisc")!r})

def test_skip_naming_no_entry():
    pytest.skip("this machine cannot: floppy: no floppy drive")

@pytest.mark.xfail(reason="known", strict=True)
def test_expected_failure():
    assert False
"""


def session(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, ci: str | None) -> pytest.RunResult:
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    pytester.makepyfile(test_suite=SUITE)
    return pytester.runpytest("-p", "tests.skip_policy", "-rA")


def test_on_ci_only_the_registrys_skips_stay_skips(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    result = session(pytester, monkeypatch, "true")
    # The marker's skip fails at set-up (an error), the body's in the call (a failure): each with its reason.
    result.assert_outcomes(passed=1, skipped=1, failed=2, errors=1, xfailed=1)
    text = result.stdout.str()
    assert "skipped on CI (CI=true): needs fio (apt-get install fio); missing here: fio" in text
    assert "skipped on CI (CI=true): PostgreSQL is not installed here" in text
    assert "skipped on CI (CI=true): this machine cannot: floppy" in text  # a name the registry lacks
    assert "tests/unavoidable_skips.py" in text  # where an unavoidable skip would have to be named
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_the_session_ends_listing_what_this_machine_cannot(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = session(pytester, monkeypatch, "true").stdout.lines
    start = next(i for i, line in enumerate(lines) if skip_policy.SECTION in line)
    assert lines[start + 1 : start + 3] == [
        f"netem: {UNAVOIDABLE['netem'].why}",
        "    test_suite.py::test_skip_the_machine_cannot_avoid",
    ]
    assert "=" in lines[start + 3]  # the next section: nothing else listed


@pytest.mark.parametrize("ci", [None, "false", ""])
def test_elsewhere_skips_stay_skips(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, ci: str | None) -> None:
    result = session(pytester, monkeypatch, ci)
    result.assert_outcomes(passed=1, skipped=4, xfailed=1)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([f"*{skip_policy.SECTION}*", "netem: *"])  # listed here too


def test_a_module_skipped_whole_fails_on_ci(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    pytester.makepyfile(test_gone="import pytest\npytest.importorskip('no_such_module_here')\n")
    result = pytester.runpytest("-p", "tests.skip_policy")
    assert result.ret != pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*skipped on CI (CI=true): could not import 'no_such_module_here'*"])


def test_ci_is_read_as_ci_services_set_it() -> None:
    assert skip_policy.on_ci({"CI": "true"}) and skip_policy.on_ci({"CI": "True"}) and skip_policy.on_ci({"CI": "1"})
    assert not skip_policy.on_ci({}) and not skip_policy.on_ci({"CI": "false"}) and not skip_policy.on_ci({"CI": ""})


def test_a_reason_names_an_entry_only_when_tagged_so() -> None:
    assert named(tagged("device-mapper", "no dm-thin-pool")) == "device-mapper"
    assert named("device-mapper is missing") is None  # an ordinary skip that happens to mention one
    assert named("this machine cannot: floppy: none") is None
    with pytest.raises(KeyError, match="floppy"):
        tagged("floppy", "none")


def test_every_entry_says_why_and_probes_this_machine() -> None:
    for name, entry in UNAVOIDABLE.items():
        assert len(entry.why) > 40 and "kernel" in entry.why, name  # every one is the kernel's doing
        assert isinstance(entry.lacks(), bool), name


def test_cannot_skips_as_the_registrys_only_where_this_machine_lacks_it() -> None:
    for name, entry in UNAVOIDABLE.items():
        with pytest.raises(pytest.skip.Exception) as skipped:
            unavoidable_skips.cannot(name, "the test's own reason")
        assert (named(skipped.value.msg) == name) == entry.lacks(), (name, skipped.value.msg)
        assert "the test's own reason" in skipped.value.msg


def test_every_requires_marker_has_a_check_and_a_reason(pytestconfig: pytest.Config) -> None:
    declared = {m.split(":")[0] for m in pytestconfig.getini("markers") if m.startswith("requires_")}
    assert declared == set(REQUIREMENTS)
    for marker, (missing, needs) in REQUIREMENTS.items():
        assert needs.startswith("needs "), marker
        lacking = missing()
        assert lacking is None or (isinstance(lacking, str) and lacking), (marker, lacking)
