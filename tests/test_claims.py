"""lib.claims: a page's claim raises only in the book's own build (strict), is recorded for the
robustness table (record), and never stops a learner's notebook (unset)."""
import json

import numpy as np
import pytest

from lib import checks, claims


@pytest.fixture
def strict(monkeypatch):
    monkeypatch.setenv("BOOK_CLAIMS", "strict")


def test_strict_raises_with_the_claim_value_and_threshold(strict):
    assert claims.check(2.5, ">", 2.0, "at least twice as slow") is True
    with pytest.raises(claims.ClaimFailed, match=r"at least twice as slow.*1\.9 > 2 is false"):
        claims.check(1.9, ">", 2.0, "at least twice as slow")
    with pytest.raises(claims.ClaimFailed, match="every seed converged"):
        claims.holds(False, "every seed converged")
    assert isinstance(claims.ClaimFailed("x"), AssertionError)   # nbval and the build report it as one


@pytest.mark.parametrize("value,op,threshold,ok", [
    (3, ">", 2, True), (2, ">", 2, False), (2, ">=", 2, True), (1, "<", 2, True), (2, "<", 2, False),
    (2, "<=", 2, True), (2, "==", 2, True), (2, "!=", 2, False), (np.float32(0.5), "<", 1, True)])
def test_each_comparison(value, op, threshold, ok, monkeypatch):
    monkeypatch.delenv("BOOK_CLAIMS", raising=False)
    assert claims.check(value, op, threshold, "words") is ok


def test_nan_never_holds(strict):
    with pytest.raises(claims.ClaimFailed):
        claims.check(float("nan"), "<", 1.0, "a loss below 1")
    with pytest.raises(claims.ClaimFailed):
        claims.check(float("nan"), ">", 1.0, "a ratio above 1")


def test_unset_is_silent_and_never_raises(monkeypatch, capsys):
    monkeypatch.delenv("BOOK_CLAIMS", raising=False)
    assert claims.mode() == "quiet"
    assert claims.check(1.0, ">", 2.0, "false here") is False
    assert claims.holds(False, "false here") is False
    assert capsys.readouterr() == ("", "")


def test_record_writes_value_threshold_and_margin(monkeypatch, tmp_path):
    log = tmp_path / "claims.jsonl"
    monkeypatch.setenv("BOOK_CLAIMS", "record")
    monkeypatch.setenv("BOOK_CLAIMS_LOG", str(log))
    monkeypatch.setenv("BOOK_CLAIMS_PAGE", "tuning")
    claims.check(3.0, ">", 2.0, "ratio above 2")          # holds by half the threshold
    claims.check(1.5, "<", 1.0, "below 1")                # fails by half
    claims.holds(True, "all converged")
    rows = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [r["ok"] for r in rows] == [True, False, True]
    assert rows[0]["margin"] == pytest.approx(0.5) and rows[1]["margin"] == pytest.approx(-0.5)
    assert rows[0]["page"] == "tuning" and rows[0]["claim"] == "ratio above 2" and "margin" not in rows[2]
    assert rows[1]["n"] == rows[0]["n"] + 1


@pytest.mark.parametrize("call,error,match", [
    (lambda: claims.check(1, "=>", 2, "x"), ValueError, "op must be one of"),
    (lambda: claims.check(np.ones(3), ">", 0, "x"), TypeError, "value must be a real number"),
    (lambda: claims.check("2", ">", 0, "x"), TypeError, "value must be a real number"),
    (lambda: claims.check(True, ">", 0, "x"), TypeError, "value must be a real number, not bool"),
    (lambda: claims.check(1, ">", 0, ""), ValueError, "say the claim in words"),
    (lambda: claims.holds(np.ones(3) > 0, "x"), TypeError, "reduce an array"),
    (lambda: claims.holds(1, "x"), TypeError, "must be True or False"),
])
def test_bad_input_is_named(call, error, match, monkeypatch):
    monkeypatch.setenv("BOOK_CLAIMS", "strict")
    with pytest.raises(error, match=match):
        call()


def test_unknown_mode_is_an_error(monkeypatch):
    monkeypatch.setenv("BOOK_CLAIMS", "loud")
    with pytest.raises(ValueError, match="BOOK_CLAIMS must be"):
        claims.check(1, ">", 0, "x")


def test_seed_offset_moves_every_seed_the_same_way(monkeypatch):
    monkeypatch.delenv("BOOK_SEED_OFFSET", raising=False)
    assert claims.seed(3) == 3
    a = checks.generator(3).standard_normal(4)
    assert np.array_equal(a, np.random.default_rng(3).standard_normal(4))
    monkeypatch.setenv("BOOK_SEED_OFFSET", "1000")
    assert claims.seed(3) == 1003
    assert np.array_equal(checks.generator(3).standard_normal(4), np.random.default_rng(1003).standard_normal(4))
    g = np.random.default_rng(5)                  # a Generator passed in is used as it is
    assert checks.generator(g) is g
    monkeypatch.setenv("BOOK_SEED_OFFSET", "x")
    with pytest.raises(ValueError, match="BOOK_SEED_OFFSET must be an integer"):
        claims.seed(1)


def test_seed_offset_reaches_the_training_runs(monkeypatch):
    torch = pytest.importorskip("torch")
    from lib import training

    monkeypatch.delenv("BOOK_SEED_OFFSET", raising=False)
    base = training.batch_stream([0], 2, batch_size=4)
    monkeypatch.setenv("BOOK_SEED_OFFSET", "1000")
    moved = training.batch_stream([0], 2, batch_size=4)
    monkeypatch.setenv("BOOK_SEED_OFFSET", "0")
    again = training.batch_stream([0], 2, batch_size=4)
    assert not torch.equal(base.query[0], moved.query[0]) and torch.equal(base.query[0], again.query[0])


@pytest.fixture
def glued(monkeypatch, tmp_path):
    """myst-nb's glue replaced by a recorder, and claims recorded to a log: (glued calls, log path)."""
    myst_nb = pytest.importorskip("myst_nb")
    got = []
    monkeypatch.setattr(myst_nb, "glue", lambda name, obj, display=True: got.append((name, obj, display)))
    log = tmp_path / "claims.jsonl"
    monkeypatch.setenv("BOOK_CLAIMS", "record")
    monkeypatch.setenv("BOOK_CLAIMS_LOG", str(log))
    return got, log


def test_claim_glues_through_myst_nb_and_checks(glued, monkeypatch):
    """claim() hands the number to myst-nb's own glue (display off) and checks it like check()."""
    got, log = glued
    assert claims.claim("ratio", 4.5, ">", 3.0, "about 4 to 5 times") is True
    assert got == [("ratio", 4.5, False)]
    (row,) = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert row["key"] == "ratio" and row["value"] == 4.5 and row["threshold"] == 3.0 and row["ok"]
    monkeypatch.setenv("BOOK_CLAIMS", "strict")
    with pytest.raises(claims.ClaimFailed, match=r"about 4 to 5 times.*2\.5 > 3 is false"):
        claims.claim("ratio", 2.5, ">", 3.0, "about 4 to 5 times")
    assert len(got) == 1                      # a failed claim in the build glues nothing
    with pytest.raises(ValueError, match="key must be the glue key"):
        claims.claim("", 1.0, ">", 0, "x")


def test_claim_without_myst_nb_only_checks(monkeypatch):
    """In a learner's environment (no myst-nb) claim() still checks, and needs nothing else."""
    import builtins

    real_import = builtins.__import__

    def no_myst_nb(name, *a, **k):
        if name == "myst_nb" or name.startswith("myst_nb."):
            raise ImportError("no myst_nb here")
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_myst_nb)
    monkeypatch.delenv("BOOK_CLAIMS", raising=False)
    assert claims.claim("k", 1.0, "<", 2.0, "below 2") is True
    assert claims.claim("k", 3.0, "<", 2.0, "below 2") is False


def test_varies_records_its_bound_and_glues_the_percentage(glued):
    got, log = glued
    assert claims.varies("spread", r"ratio_\d+", 0.3, "the ratios moved by up to 30 %") == pytest.approx(30)
    assert got == [("spread", pytest.approx(30), False)]
    (row,) = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert row["varies"] == r"ratio_\d+" and row["within"] == 0.3 and row["key"] == "spread"
    for bad, match in (((r"(", 0.3), "regular expression"), ((r"x", 30), "a fraction"), ((r"x", 0), "a fraction")):
        with pytest.raises(ValueError, match=match):
            claims.varies("k", *bad, "words")


def test_a_numpy_scalar_is_glued_as_a_python_number(glued):
    """myst-nb glues a NumPy scalar as its repr ("np.float64(...)"), which {glue:text}`k:.2f` cannot format."""
    import numpy as np
    got, _ = glued
    claims.claim("ratio_np", np.float64(4.5), ">", 2.0, "a NumPy median")
    assert got[-1][1] == 4.5 and type(got[-1][1]) is float
