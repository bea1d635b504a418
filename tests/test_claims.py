import pytest

from tutorial_lib.course import claims
from tutorial_lib.course.claims import ClaimNotMet, claim


def test_a_claim_that_holds_returns_true(monkeypatch):
    monkeypatch.delenv("TUTORIAL_CLAIMS", raising=False)
    assert claim(1 > 0, "never shown") is True


def test_a_claim_not_met_raises_its_own_type_with_a_plain_message(monkeypatch):
    monkeypatch.delenv("TUTORIAL_CLAIMS", raising=False)
    with pytest.raises(ClaimNotMet, match=r"^claim not met on this model: the circuit recovers 10%") as err:
        claim(0.1 >= 0.8, "the circuit recovers 10%")
    assert not isinstance(err.value, AssertionError)  # told apart from a crash or a broken assert


def test_report_mode_prints_records_and_goes_on(monkeypatch, capsys):
    monkeypatch.setenv("TUTORIAL_CLAIMS", "report")
    monkeypatch.setattr(claims, "NOT_MET", [])
    assert claim(False, "reuse margin 0.01 (needs 0.3)") is False
    assert "[claim not met on this model: reuse margin 0.01 (needs 0.3)]" in capsys.readouterr().out
    assert claims.NOT_MET == ["reuse margin 0.01 (needs 0.3)"]


def test_unknown_mode_is_named(monkeypatch):
    monkeypatch.setenv("TUTORIAL_CLAIMS", "ignore")
    with pytest.raises(ValueError, match=r"TUTORIAL_CLAIMS='ignore' is not one of \('raise', 'report'\)"):
        claim(False, "x")


def test_required_claims_raise_even_in_report_mode_and_say_when_they_held(monkeypatch, capsys):
    monkeypatch.setenv("TUTORIAL_CLAIMS", "report")
    monkeypatch.setenv("TUTORIAL_CLAIMS_REQUIRED", " 04.pp-above-random, 04.eap-cpr-above-random ")
    monkeypatch.setattr(claims, "NOT_MET", [])
    assert claims.required_claims() == {"04.pp-above-random", "04.eap-cpr-above-random"}
    with pytest.raises(ClaimNotMet, match="path-patching circuit"):
        claim(False, "the path-patching circuit's f = 0.1", name="04.pp-above-random")
    assert claim(True, "x", name="04.eap-cpr-above-random") is True
    assert "[required claim held: 04.eap-cpr-above-random]" in capsys.readouterr().out
    assert claim(False, "another claim", name="04.not-required") is False  # named but not required: reported
    assert claim(False, "an unnamed claim") is False
    assert claims.NOT_MET == ["another claim", "an unnamed claim"]
    monkeypatch.delenv("TUTORIAL_CLAIMS_REQUIRED")
    assert claim(False, "the path-patching circuit", name="04.pp-above-random") is False


# ------------------------------------------------------------------ three outcomes, for every kind of power check
import torch  # noqa: E402

from tutorial_lib.core.controls import possible_draws  # noqa: E402
from tutorial_lib.course.claims import (Outcome, away_from_bounds, beyond_noise, check, enough_draws,  # noqa: E402
                                        not_saturated)

KINDS = {
    # kind: (a power check with room, one without)
    "control draws": (enough_draws(120, what="type-matched sets"), enough_draws(1, what="layer-matched sets")),
    "baseline bounds": (away_from_bounds(0.3, 0.0, 1.0, what="random reuse"), away_from_bounds(0.0, 0.0, 1.0, what="random reuse")),
    "saturation": (not_saturated([0.0, 0.4, 0.9], 0.0, 1.0), not_saturated([-1.83, -1.84, -1.84], -1.84, 0.0)),
    "noise": (beyond_noise([0.5, 0.6, 0.4, 0.7, 0.55, 0.45]), beyond_noise([0.5, -0.6, 0.4, -0.7, 0.1, -0.2])),
}


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.delenv("TUTORIAL_CLAIMS", raising=False)
    monkeypatch.delenv("TUTORIAL_CLAIMS_REQUIRED", raising=False)
    monkeypatch.setattr(claims, "RESULTS", [])
    monkeypatch.setattr(claims, "NOT_MET", [])


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_kind_holds_fails_and_is_not_testable(kind, capsys):
    room, none = KINDS[kind]
    assert room.ok and not none.ok
    assert check("99.a", "a test", True, room).outcome is Outcome.HOLDS
    assert "✔ 99.a holds: a test" in capsys.readouterr().out
    with pytest.raises(ClaimNotMet, match="99.b: a test"):
        check("99.b", "a test", False, room)
    for holds in (True, False):  # no power: neither outcome is shown, and nothing raises
        r = check("99.c", "a test", holds, [room, none])
        assert r.outcome is Outcome.NOT_TESTABLE and r.reasons == [none.reason] and not r
        out = capsys.readouterr().out
        assert "○ 99.c not testable on this model: " + none.reason in out and "✔" not in out


def test_not_testable_never_raises_in_any_mode(monkeypatch):
    for mode in ("raise", "report"):
        monkeypatch.setenv("TUTORIAL_CLAIMS", mode)
        monkeypatch.setenv("TUTORIAL_CLAIMS_REQUIRED", "99.req")
        assert check("99.req", "t", False, enough_draws(0)).outcome is Outcome.NOT_TESTABLE


def test_report_mode_records_a_failure_and_goes_on(monkeypatch, capsys):
    monkeypatch.setenv("TUTORIAL_CLAIMS", "report")
    r = check("99.f", "reuse beats random", False, enough_draws(40))
    assert r.outcome is Outcome.FAILS and claims.NOT_MET == ["99.f: reuse beats random"]
    assert "[claim not met on this model: 99.f: reuse beats random]" in capsys.readouterr().out


def test_a_claim_without_power_or_name_is_refused():
    with pytest.raises(ValueError, match="no power check"):
        check("99.x", "t", True, [])
    with pytest.raises(ValueError, match="stable name"):
        check("", "t", True, enough_draws(30))


def test_summary_counts_the_last_result_of_each_claim(capsys):
    check("01.a", "t", True, enough_draws(30))
    check("01.b", "t", True, enough_draws(3))
    check("01.a", "t again", True, enough_draws(30))  # a cell run twice counts once
    with pytest.raises(ClaimNotMet):
        check("01.c", "t", False, enough_draws(30))
    check("02.a", "t", True, enough_draws(30))
    assert claims.counts("01") == {"holds": 1, "fails": 1, "not testable": 1}
    table = claims.summary("01")
    assert list(table.index) == ["01.a", "01.b", "01.c"]
    assert table.loc["01.b", "outcome"].startswith("○") and "3 distinct draws" in table.loc["01.b", "test, or why not testable"]
    assert "1 hold, 1 fail, 1 not testable" in capsys.readouterr().out


def test_possible_draws_counts_the_controls_room():
    from conftest import make_tiny_model

    model = make_tiny_model("toy")  # 2 layers x 2 heads, 2 MLPs (conftest's toy shape)
    heads, mlps = model.cfg.n_layers * model.cfg.n_heads, model.cfg.n_layers
    import math
    assert possible_draws(model, ["a0.h0", "m0"], "type") == math.comb(heads - 1, 1) * math.comb(mlps - 1, 1)
    assert possible_draws(model, ["m0", "m1"], "type") == 0  # every MLP in the circuit: no type-matched control
    assert possible_draws(model, ["a0.h0"], "layer") == model.cfg.n_heads - 1
    with pytest.raises(ValueError, match="control kind"):
        possible_draws(model, ["a0.h0"], "size")


def test_module_doctests():
    import doctest

    assert doctest.testmod(claims).failed == 0
