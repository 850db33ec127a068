"""Waiting on a busy machine (griffon.launch): the slowness factor, stretched deadlines and the
message a wait gives up with."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

import griffon.launch as launch
from griffon.launch import Patience, TooSlow, eventually, patient, slowness


def loaded(monkeypatch: pytest.MonkeyPatch, load: float, cores: int = 2) -> None:
    """Pretend the machine has this 1-minute load average on this many cores."""
    monkeypatch.delenv(launch.SLOWNESS_VARIABLE, raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))


def test_slowness_is_the_load_per_core_over_3_between_1_and_30(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded(monkeypatch, 0.3)
    assert slowness().factor == 1.0 and patient(10) == 10
    loaded(monkeypatch, 6.0)  # 3 per core: what the suite alone makes, the waits allow for it
    assert slowness().factor == 1.0
    loaded(monkeypatch, 24.0)
    assert slowness().factor == 4.0 and patient(10) == 40
    assert slowness().describe() == "load 24.0 on 2 cores"
    loaded(monkeypatch, 500.0)
    assert slowness().factor == 30.0


def test_the_variable_sets_the_factor_and_a_bad_one_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded(monkeypatch, 12.0)
    monkeypatch.setenv(launch.SLOWNESS_VARIABLE, "2.5")
    assert slowness().factor == 2.5 and slowness().forced
    assert slowness().describe() == "GRIFFON_TEST_SLOWNESS=2.5, load 12.0 on 2 cores"
    for bad in ("fast", "0.5", "nan", "31"):
        monkeypatch.setenv(launch.SLOWNESS_VARIABLE, bad)
        with pytest.raises(ValueError, match="GRIFFON_TEST_SLOWNESS must be a number from 1 to 30"):
            slowness()


def test_a_deadline_stretches_when_the_load_rises_while_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]
    monkeypatch.setattr(launch, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    loaded(monkeypatch, 1.0)
    patience = Patience(10, "the service was not ready")
    clock[0] += 9
    assert patience.left() == pytest.approx(1)
    loaded(monkeypatch, 24.0)  # x4 from here on
    assert patience.left() == pytest.approx(31)
    loaded(monkeypatch, 1.0)  # the worst load seen counts: a deadline never shrinks back
    assert patience.left() == pytest.approx(31)
    patience.grant(5)
    clock[0] += 36
    assert patience.expired()
    message = str(patience.failure("the log"))
    assert message == ("the machine is slow (load 24.0 on 2 cores): the service was not ready after 45 s "
                       "(10 s allowed, x4.0 for the load)\nthe log")


def test_a_wait_on_an_idle_machine_says_slowness_is_not_the_cause(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded(monkeypatch, 0.5)
    with pytest.raises(TooSlow, match=r"^never after 0 s; the machine is not busy \(load 0.5 on 2 cores\): "
                                      r"not a slowness problem$"):
        eventually(lambda: False, 0.05, "never", every=0.01)
    answers = iter([None, 0, "done"])
    assert eventually(lambda: next(answers), 5, "no answer", every=0.0) == "done"
