from __future__ import annotations

from layerbench.analysis.checks import bottleneck, device_accounting, faster_than_baseline, noisy

MiB = 2**20


def test_device_accounting_flags_a_cache_hit_and_passes_a_real_read() -> None:
    cached = device_accounting("vda", fio_read=1024 * MiB, fio_written=0, dev_read=3 * MiB, dev_written=0)
    assert cached.status == "flag" and "page cache" in cached.detail and "vda" in cached.detail
    real = device_accounting("vda", fio_read=1024 * MiB, fio_written=0, dev_read=1030 * MiB, dev_written=0)
    assert real.status == "pass"


def test_write_amplification_is_not_a_flag() -> None:
    assert device_accounting("loop3", 0, 100 * MiB, 0, 180 * MiB).status == "pass"


def test_noisy_says_what_to_do() -> None:
    flag = noisy(cv=0.2, n=5)
    assert flag.status == "flag" and "repetitions" in flag.detail
    assert noisy(cv=0.03, n=5).status == "pass"
    assert noisy(cv=0.0, n=1).status == "skip"


def test_faster_than_physics() -> None:
    assert faster_than_baseline(1.4, "raw device", touches_device=True).status == "flag"
    assert faster_than_baseline(1.4, "raw device", touches_device=False).status == "pass"
    assert faster_than_baseline(0.9, "raw device", touches_device=True).status == "pass"
    assert faster_than_baseline(float("nan"), "raw device", touches_device=True).status == "skip"


def test_bottleneck() -> None:
    assert bottleneck(97.0, 20.0).status == "flag"
    assert bottleneck(97.0, 99.0).status == "pass"
    assert bottleneck(40.0, 10.0).status == "pass"
