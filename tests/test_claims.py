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
