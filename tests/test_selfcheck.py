"""Self-checks: right answers pass, wrong ones get a verdict with a reason, never a traceback."""
import numpy as np

import lib


def test_right_answer():
    v = lib.check_array([[0.5, 0.5]], np.array([[0.5, 0.5]]), name="weights")
    assert v.ok and bool(v) and "matches" in v.message and str(v).startswith("✓")


def test_missing_answer():
    v = lib.check_array(None, [1.0])
    assert not v.ok and "no answer yet" in v.message


def test_wrong_shape_and_transpose():
    v = lib.check_array(np.ones((3, 2)), np.ones((2, 3)), name="scores")
    assert not v.ok and "transpose" in v.message
    v = lib.check_array(np.ones(4), np.ones((2, 3)))
    assert not v.ok and "shape (4,)" in v.message


def test_factor_of_sqrt2_is_named():
    v = lib.check_array([1.0, 2.0], np.array([1.0, 2.0]) / np.sqrt(2), name="scaled")
    assert not v.ok and "factor of √2" in v.message and "index (1,)" in v.message


def test_not_numbers_and_nan():
    text = lib.check_array("abc", [1.0])
    assert not text and text.mistake == "unreadable" and "text" in text.message
    assert "could not read" in lib.check_array({"a": 1}, [1.0]).message
    assert "different lengths" in lib.check_array([[1.0, 2.0], [3.0]], [[1.0, 2.0], [3.0, 4.0]]).message
    assert "NaN" in lib.check_array([np.nan], [1.0]).message


def test_number():
    assert lib.check_number(0.25, 0.25).ok
    assert not lib.check_number([1, 2], 0.25).ok
    assert "0.3" in lib.check_number(0.3, 0.25).message


# ---------------------------------------------------------------------------
# The `practice` chapter's specific checks: every right answer passes, every recognised
# mistake is named, and no learner input raises.
# ---------------------------------------------------------------------------
import math  # noqa: E402 - this part's imports, with this part
import re  # noqa: E402

import pytest  # noqa: E402

Q2, K2 = np.array([1.0, 2.0]), np.array([3.0, 1.0])            # q·k = 5, scaled 5/√2
Q3 = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]])              # (L=2, d_k=3)
K3 = np.array([[2.0, 1.0, 1.0], [1.0, -1.0, 0.0], [0.0, 2.0, 1.0], [1.0, 1.0, 1.0]])   # (S=4, d_k=3)
QSQ = np.array([[1.0, 0.0, 1.0], [0.0, 2.0, 1.0], [1.0, 1.0, 0.0]])   # square: L = S = d_k = 3
KSQ = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0], [2.0, 1.0, 0.0]])


def exact_softmax(z, axis=-1):
    """Softmax by the textbook formula with math.exp, one row at a time (not lib's code)."""
    z = np.asarray(z, dtype=float)
    if z.ndim == 1:
        m = max(z)
        e = [math.exp(v - m) for v in z]
        return np.array([x / sum(e) for x in e])
    if axis in (0, -2):
        return exact_softmax(z.T, -1).T
    return np.stack([exact_softmax(row) for row in z])


# --- right answers -------------------------------------------------------------------------

def test_dot_right_answers_vector_and_matrix():
    assert lib.check_dot(5, Q2, K2).ok
    assert lib.check_dot(5.0004, Q2, K2).ok                      # rounding to 3 decimals is fine
    assert lib.check_dot([5.0], Q2, K2).ok                       # a one-element list counts as a number
    assert lib.check_dot(np.array([[4, 1, 2, 3], [0, -1, 1, 0]]), Q3, K3).ok   # worked out by hand
    assert lib.check_dot(np.array([4, 1, 2, 3]), Q3[0], K3).ok  # one query against all keys


def test_scaled_scores_right_answers():
    v = lib.check_scaled_scores(3.536, Q2, K2)                   # 5/√2 = 3.5355…, rounded
    assert v.ok and v.mistake is None and "3.536" in v.message
    want = np.array([[4, 1, 2, 3], [0, -1, 1, 0]]) / math.sqrt(3)
    assert lib.check_scaled_scores(want.round(3), Q3, K3).ok


def test_softmax_right_answers():
    assert lib.check_softmax([0.665, 0.245, 0.090], [2.0, 1.0, 0.0]).ok     # by hand, 3 decimals
    s = np.array([[2.0, 1.0, 0.0], [0.0, 0.0, 3.0]])
    assert lib.check_softmax(exact_softmax(s), s).ok
    assert lib.check_softmax(exact_softmax(s, 0), s, axis=0).ok
    assert lib.check_softmax([0.269, 0.731], [1000.0, 1001.0]).ok          # large scores, stable answer


def test_attention_weights_right_answer():
    want = exact_softmax((Q3 @ K3.T) / math.sqrt(3))
    v = lib.check_attention_weights(want, Q3, K3)
    assert v.ok and v.mistake is None


def test_right_answer_as_torch_tensor_with_grad():
    torch = pytest.importorskip("torch")
    t = torch.tensor(exact_softmax([2.0, 1.0, 0.0]), requires_grad=True)
    assert lib.check_softmax(t, [2.0, 1.0, 0.0]).ok
    assert lib.check_dot(torch.tensor(5.0), Q2, K2).ok
    assert not lib.check_dot(torch.tensor(5.0) / 2 ** 0.5, Q2, K2).ok
    for dt in (torch.float16, torch.bfloat16):             # half precision: no direct .numpy()
        assert lib.check_softmax(torch.tensor([0.665, 0.245, 0.090], dtype=dt), [2.0, 1.0, 0.0]).ok
    assert lib.check_dot(torch.tensor([3, 2]), Q2, K2).mistake == "not_summed"   # integer tensor


# --- every recognised mistake ----------------------------------------------------------------

@pytest.mark.parametrize("answer, mistake, words", [
    (5 / math.sqrt(2), "scaled", "raw, unscaled"),
    (2.5, "divided_by_dk", "divided by d_k = 2"),
    ([3.0, 2.0], "not_summed", "did not add"),
    (7.0, "wrong_value", "You have 7, which is too large"),
    ([5.0, 5.0, 5.0], "wrong_shape", "shape (3,)"),
])
def test_dot_mistakes_vector(answer, mistake, words):
    v = lib.check_dot(answer, Q2, K2)
    assert not v.ok and v.mistake == mistake and words in v.message, v.message


@pytest.mark.parametrize("make, mistake, words", [
    (lambda raw: raw, "unscaled", "forgot to divide by √d_k"),
    (lambda raw: raw / 3, "divided_by_dk", "divided by d_k = 3"),
    (lambda raw: raw * math.sqrt(3), "multiplied_by_sqrt_dk", "multiplied by √d_k"),
    (lambda raw: raw / 2, "divided_by_sqrt_n_keys", "number of keys"),     # S = 4 keys, √4 = 2
    (lambda raw: (raw / math.sqrt(3)).T, "transposed", "swapped"),
    (lambda raw: (raw / math.sqrt(3))[:, :3], "wrong_shape", "shape (2, 3)"),
    (lambda raw: raw / math.sqrt(3) + np.eye(2, 4), "wrong_value", "index (0, 0)"),
])
def test_scaled_score_mistakes_matrix(make, mistake, words):
    raw = np.array([[4.0, 1, 2, 3], [0, -1, 1, 0]])     # Q3 K3ᵀ by hand
    v = lib.check_scaled_scores(make(raw), Q3, K3)
    assert not v.ok and v.mistake == mistake and words in v.message, v.message


def test_scaled_score_mistakes_square_and_elementwise():
    raw = QSQ @ KSQ.T
    v = lib.check_scaled_scores((raw / math.sqrt(3)).T, QSQ, KSQ)      # same shape, values transposed
    assert not v.ok and v.mistake == "transposed" and "K Qᵀ" in v.message
    v = lib.check_scaled_scores(QSQ * KSQ / math.sqrt(3), QSQ, KSQ)
    assert not v.ok and v.mistake == "not_summed" and "entry by entry" in v.message
    v = lib.check_scaled_scores(Q2 * K2 / math.sqrt(2), Q2, K2)
    assert not v.ok and v.mistake == "not_summed"
    v = lib.check_scaled_scores(Q3[0] * K3 / math.sqrt(3), Q3[0], K3)  # (4, 3): one query, pairwise only
    assert not v.ok and v.mistake == "not_summed"


S2 = np.array([[2.0, 1.0, 0.0], [0.0, 0.0, 3.0]])


@pytest.mark.parametrize("answer, mistake, words", [
    (exact_softmax(S2, 0), "wrong_axis", "wrong axis"),
    (np.exp(S2), "not_normalised", "not yet divided by their sum"),
    (np.exp(S2 - S2.max(-1, keepdims=True)), "not_normalised", "must sum to 1"),
    (np.exp(S2) / np.exp(S2).sum(), "normalised_whole_matrix", "whole matrix"),
    (S2 / S2.sum(-1, keepdims=True), "no_exp", "without taking e^z"),
    (S2, "no_softmax", "scores themselves"),
    (exact_softmax(S2).T, "transposed", "swapped"),
    (exact_softmax(S2)[0], "wrong_shape", "shape (3,)"),
    (np.array([[0.6, 0.3, 0.05], [0.1, 0.1, 0.9]]), "wrong_value", "sum to [0.95, 1.1], not 1"),
])
def test_softmax_mistakes(answer, mistake, words):
    v = lib.check_softmax(answer, S2)
    assert not v.ok and v.mistake == mistake and words in v.message, v.message


def test_softmax_overflow_is_named():
    big = np.array([1000.0, 1001.0])
    with np.errstate(over="ignore", invalid="ignore"):
        naive = np.exp(big) / np.exp(big).sum()                 # inf / inf = nan
    v = lib.check_softmax(naive, big)
    assert not v.ok and v.mistake == "overflow" and "Subtract the row's largest score" in v.message
    v = lib.check_softmax([np.inf, 0.0], [1.0, 2.0])           # small scores: a NaN, but not overflow
    assert not v.ok and v.mistake == "not_finite"


@pytest.mark.parametrize("make, mistake, words", [
    (lambda raw: exact_softmax(raw), "unscaled", "raw scores"),
    (lambda raw: exact_softmax(raw / 3), "divided_by_dk", "flattens"),
    (lambda raw: exact_softmax(raw / math.sqrt(3), 0), "wrong_axis", "wrong axis"),
    (lambda raw: raw / math.sqrt(3), "no_softmax", "scores themselves"),
    (lambda raw: raw, "no_softmax", "raw scores q·k"),
    (lambda raw: np.exp(raw / math.sqrt(3)), "not_normalised", "sum to 1"),
])
def test_attention_weight_mistakes(make, mistake, words):
    raw = np.array([[4.0, 1, 2, 3], [0, -1, 1, 0]])
    v = lib.check_attention_weights(make(raw), Q3, K3)
    assert not v.ok and v.mistake == mistake and words in v.message, v.message


def test_a_right_answer_is_never_reported_as_a_mistake_when_they_coincide():
    # d_k = 1: scaled and unscaled scores are equal, so the right answer must pass.
    assert lib.check_scaled_scores(6.0, [2.0], [3.0]).ok
    assert lib.check_dot(6.0, [2.0], [3.0]).ok


# --- no learner input raises -------------------------------------------------------------------

BAD_INPUTS = [None, ..., "abc", "", {"a": 1}, object(), 1 + 2j, [[1, 2], [3]], [], np.nan,
              [np.nan, 1.0, 0.0], np.ones((7, 7, 7)), True, [1.0, "x"]]
CHECKS = [
    lambda a: lib.check_dot(a, Q2, K2),
    lambda a: lib.check_scaled_scores(a, Q3, K3),
    lambda a: lib.check_softmax(a, S2),
    lambda a: lib.check_softmax(a, [1000.0, 1001.0]),
    lambda a: lib.check_attention_weights(a, Q3, K3),
    lambda a: lib.check_array(a, S2),
    lambda a: lib.check_number(a, 0.5),
]


@pytest.mark.parametrize("check", range(len(CHECKS)))
@pytest.mark.parametrize("answer", range(len(BAD_INPUTS)))
def test_never_raises_on_learner_input(check, answer):
    v = CHECKS[check](BAD_INPUTS[answer])
    assert isinstance(v, lib.Verdict) and not v.ok and v.message and str(v).startswith("✗")


def test_specific_messages_for_missing_and_ragged_answers():
    assert lib.check_softmax(None, S2).mistake == "missing"
    assert "no answer yet" in lib.check_softmax(None, S2).message
    assert "different lengths" in lib.check_softmax([[1, 2], [3]], S2).message
    assert lib.check_dot("abc", Q2, K2).mistake == "unreadable"


def test_bad_reference_inputs_raise_named_errors():
    with pytest.raises(ValueError, match="3 components and k has 2"):
        lib.check_dot(1.0, [1.0, 2.0, 3.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="NaN"):
        lib.check_softmax(1.0, [np.nan, 1.0])
    with pytest.raises(ValueError, match="matrix of keys"):
        lib.check_attention_weights(1.0, [1.0, 2.0], [1.0, 2.0])


def test_verdict_markdown_and_old_constructor():
    v = lib.Verdict(True, "fine")                      # two-argument form still works
    assert v.mistake is None and v._repr_markdown_().startswith("**✓")
    assert lib.check_dot(2.5, Q2, K2)._repr_markdown_().startswith("**✗")


# --- nearly right: right to fewer decimals than the check needs -------------------------------------

@pytest.mark.parametrize("check, answer, words", [
    (lambda a: lib.check_scaled_scores(a, Q2, K2), 3.54,
     "= 3.54 is right to 2 decimals. Give at least 3 decimals"),
    (lambda a: lib.check_scaled_scores(a, Q2, K2), [3.54], "is right to 2 decimals"),
    (lambda a: lib.check_scaled_scores(a, Q2, K2), 3.5, "= 3.5 is right to 1 decimal. Give at least 3"),
    (lambda a: lib.check_scaled_scores(a, Q2, K2), 4, "is right when rounded to a whole number"),
    (lambda a: lib.check_scaled_scores(a, Q2, K2), 3.53, "digits cut off instead of rounded"),
    (lambda a: lib.check_softmax(a, [1.0, 0.0, -1.0]), [0.67, 0.24, 0.09],
     "every entry is right to 2 decimals"),
    (lambda a: lib.check_softmax(a, [1.0, 0.0, -1.0]), [0.66, 0.24, 0.09], "some entries look like"),
    (lambda a: lib.check_attention_weights(a, Q3, K3), exact_softmax((Q3 @ K3.T) / math.sqrt(3)).round(2),
     "every entry is right to 2 decimals"),
    (lambda a: lib.check_dot(a, Q3, K3), [[4.0, 1.0, 2.0, 3.1], [0, -1, 1, 0]], None),   # 3.1 for 3: wrong
    (lambda a: lib.check_number(a, math.sqrt(2)), 1.41, "= 1.41 is right to 2 decimals. Give at least 6"),
    (lambda a: lib.check_array(a, [math.sqrt(2), 0.5]), [1.414, 0.5], "every entry is right to 3 decimals"),
])
def test_nearly_right_is_a_verdict_of_its_own(check, answer, words):
    v = check(answer)
    assert not v.ok, v.message
    if words is None:
        assert v.mistake != "nearly_right", v.message
        return
    assert v.mistake == "nearly_right" and words in v.message, v.message
    assert "1 decimals" not in v.message


def test_nearly_right_never_gives_the_answer_away():
    v = lib.check_scaled_scores(3.54, Q2, K2)
    assert "3.536" not in v.message and "3.5355" not in v.message
    v = lib.check_softmax([0.67, 0.24, 0.09], [1.0, 0.0, -1.0])
    assert "0.665" not in v.message and "0.245" not in v.message


def test_a_value_computed_at_full_precision_is_never_nearly_right():
    # A measured variance outside a statistical tolerance: not a rounding problem.
    v = lib.check_number(1.0523, 1.0, rtol=0, atol=0.03)
    assert not v.ok and v.mistake is None and "You have 1.0523, which is too large" in v.message, v.message
    v = lib.check_number(1.05, 1.0, rtol=0, atol=0.03)            # typed, but not right to 2 decimals
    assert v.mistake is None and "too large" in v.message
    assert lib.check_scaled_scores(3.6, Q2, K2).mistake == "wrong_value"   # 1 decimal, wrongly rounded


def test_known_mistakes_come_before_nearly_right():
    # An answer that matches a named mistake gets that mistake, even if it is also close to the right value.
    assert lib.check_dot(3.536, Q2, K2).mistake == "scaled"
    assert lib.check_scaled_scores(2.5, Q2, K2).mistake == "divided_by_dk"


# --- numbers in messages -----------------------------------------------------------------------------

def test_whole_numbers_print_as_integers():
    v = lib.check_number(2_359_296, 2_362_368, name="parameter count")
    assert not v.ok and "You have 2,359,296, which is too small" in v.message, v.message
    assert "e+" not in v.message
    v = lib.check_number(2_362_368, 2_362_368, name="parameter count")
    assert v.ok and "e+" not in v.message
    v = lib.check_dot([7, -1], [2.0, -1.0], [[4.0, 1.0], [1.0, 3.0]])
    assert v.ok and "[7, -1]" in v.message, v.message
    v = lib.check_dot(np.array([1_000_000.0]), [1000.0], [1000.0])
    assert v.ok and "1,000,000" in v.message, v.message


def test_wrong_values_are_located_but_the_expected_value_is_not_printed():
    v = lib.check_number(2_359_296, 2_362_368)
    assert "2,362,368" not in v.message and "2362368" not in v.message
    v = lib.check_array([[0.5, 0.7]], [[0.5, 0.5]], name="weights")
    assert v.message == "weights: not yet. The largest difference is at index (0, 1): you have 0.7, " \
                        "which is too large.", v.message


# --- every message through tr, and readable in English -------------------------------------------------

def _battery():
    answers = BAD_INPUTS + [3.54, 3.53, 4, 3.6, 5.0, 2.5, [7.0, -1.0], [3.0, 2.0], np.ones((3, 2)),
                            [0.67, 0.24, 0.09], [0.66, 0.24, 0.09], [0.2, 0.3, 0.5]]
    checks = CHECKS + [
        lambda a: lib.check_scaled_scores(a, Q2, K2),
        lambda a: lib.check_softmax(a, [1.0, 0.0, -1.0]),
        lambda a: lib.check_attention_weights(a, Q3[0], K3[:3]),
        lambda a: lib.check_dot(a, [2.0, -1.0], [[4.0, 1.0], [1.0, 3.0]]),
        lambda a: lib.check_array(a, np.ones((2, 3))),
        lambda a: lib.check_number(a, 2_362_368),
        lambda a: lib.check_number(a, 5 / math.sqrt(2), rtol=1e-3),
    ]
    verdicts = [c(a) for c in checks for a in answers]
    raw = np.array([[4.0, 1, 2, 3], [0, -1, 1, 0]])
    verdicts += [lib.check_scaled_scores(make(raw), Q3, K3) for make in (
        lambda r: r, lambda r: r / 3, lambda r: r * math.sqrt(3), lambda r: r / 2,
        lambda r: (r / math.sqrt(3)).T)]
    verdicts += [lib.check_softmax(x, S2) for x in (exact_softmax(S2, 0), np.exp(S2),
                                                    S2 / S2.sum(-1, keepdims=True), exact_softmax(S2).T)]
    verdicts += [lib.check_softmax(exact_softmax(S2), S2, axis=0), lib.check_array([1.0, 2.0], [0.5, 1.0]),
                 lib.check_attention_weights(exact_softmax(raw), Q3, K3), lib.check_number([1, 2], 0.25)]
    with np.errstate(over="ignore", invalid="ignore"):
        verdicts.append(lib.check_softmax(np.exp([1000.0, 1001.0]) / np.exp([1000.0, 1001.0]).sum(),
                                          [1000.0, 1001.0]))
    return verdicts


def _tr_messages():
    import ast
    from pathlib import Path
    tree = ast.parse((Path(lib.__file__).parent / "feedback" / "selfcheck.py").read_text(encoding="utf-8"))
    return {n.args[0].value for n in ast.walk(tree) if isinstance(n, ast.Call)
            and getattr(n.func, "id", "") == "tr" and n.args and isinstance(n.args[0], ast.Constant)}


def test_every_message_goes_through_tr(monkeypatch):
    from lib import i18n
    msgs = _tr_messages()
    assert len(msgs) > 40
    # A fake catalog wraps every message in ⟦ ⟧: text outside all ⟦ ⟧ did not pass through tr.
    monkeypatch.setattr(i18n, "_catalogs", {"ja": {m: "⟦" + m + "⟧" for m in msgs}})
    lib.set_language("ja")
    try:
        verdicts = _battery()
        labels = [v._repr_html_() for v in verdicts[:2]]
    finally:
        lib.set_language(None)
    assert verdicts and all(isinstance(v, lib.Verdict) for v in verdicts)
    for v in verdicts:
        left, prev = v.message, None
        while left != prev:                          # remove innermost ⟦...⟧ first: fields nest
            prev, left = left, re.sub(r"⟦[^⟦⟧]*⟧", "", left)
        assert not left.strip(), f"not through tr: {left!r} in {v.message!r}"
    assert "⟦Not yet.⟧" in labels[0] or "⟦Correct.⟧" in labels[0]


def test_english_messages_read_as_sentences():
    for v in _battery():
        m = v.message
        assert m.endswith((".", ".)")), m
        assert "{" not in m and "}" not in m, m        # no unfilled template field
        assert "  " not in m and ".." not in m and " ." not in m and "1 decimals" not in m, m
        assert "⟦" not in m


# --- the verdict in HTML and Markdown -------------------------------------------------------------------

def test_html_and_markdown_show_the_same_verdict():
    v = lib.Verdict(False, "a < b & Σ_m e^z_m; replace `None<x>` and *run*.", "x")
    h = v._repr_html_()
    assert h.startswith("<p") and "<strong>✗ Not yet.</strong>" in h
    assert "a &lt; b &amp; Σ_m e^z_m" in h and "<code>None&lt;x&gt;</code>" in h and "*run*" in h
    md = v._repr_markdown_()
    assert md.startswith("**✗ Not yet.**") and "`None<x>`" in md
    assert r"Σ\_m" in md and r"\*run\*" in md
    ok = lib.check_scaled_scores(3.536, Q2, K2)
    assert "<strong>✓ Correct.</strong>" in ok._repr_html_()
    assert ok._repr_markdown_().startswith("**✓ Correct.**")
    # the words are the same in both forms
    import html as _html
    text_html = _html.unescape(re.sub(r"<[^>]+>", "", h))
    text_md = re.sub(r"\\(.)", r"\1", md.replace("**", "").replace("`", ""))
    assert text_html == text_md
