"""Self-checks for single exercises: the expected answer is computed here, from the exercise's inputs.

A chapter's exercise cell passes the learner's answer and the exercise's *inputs*; the right answer
never appears in any notebook cell (not even a hidden one), so a learner cannot read it off. Each
function returns a :class:`lib.selfcheck.Verdict` and never raises on the learner's answer. Messages
go through :func:`lib.i18n.tr`, so they follow the book's language.

One section per chapter; add a function to your chapter's section, export it in ``__all__``, and test
it in ``tests/test_exercises.py`` against an independent computation.
"""
from __future__ import annotations

import numpy as np

from ..infra.checks import positive_int, positive_number
from ..infra.i18n import tr
from .selfcheck import Verdict, as_array, check_number, read_answer, read_scalar
from ..formula.simulate import variance_standard_error

__all__: list[str] = []

# --- formula -------------------------------------------------------------------------------------

def _input_array(x, what, ndim):
    """The exercise's own inputs (not the learner's): a finite real array of ``ndim`` axes, else raise."""
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"self-check set-up: {what} must be an array of numbers; got {type(x).__name__}")
    try:

        a = as_array(x)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"self-check set-up: {what} is not an array of numbers ({exc})") from exc
    if a.ndim != ndim or a.size == 0:
        raise ValueError(f"self-check set-up: {what} must have {ndim} non-empty axes; got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"self-check set-up: {what} contains NaN or infinity")
    return a


def _softmax_rows(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def check_attention_output(answer, Q, K, V) -> Verdict:
    """Exercise `ex-formula-code`: the learner's ``softmax(Q Kᵀ/√d_k) V``, computed here from ``Q``, ``K``, ``V``.

    ``Q`` is (L, d_k), ``K`` (S, d_k), ``V`` (S, d_v); the answer is (L, d_v). Recognised mistakes
    (``Verdict.mistake``): ``unscaled`` (no 1/√d_k), ``divided_by_dk``, ``wrong_axis`` (softmax down
    the columns), ``weights_only`` (the weights, not yet times V), ``no_softmax`` (scaled scores times
    V), ``rounded`` (right to about 2 decimals only), ``wrong_shape``, ``wrong_value``. Never raises on
    the answer; raises ``ValueError``/``TypeError`` if ``Q``, ``K``, ``V`` do not fit together.
    """
    q, k, v = _input_array(Q, "Q", 2), _input_array(K, "K", 2), _input_array(V, "V", 2)
    if q.shape[1] != k.shape[1]:
        raise ValueError(f"self-check set-up: Q has d_k = {q.shape[1]} and K has {k.shape[1]}; they must agree")
    if k.shape[0] != v.shape[0]:
        raise ValueError(f"self-check set-up: K has {k.shape[0]} rows and V has {v.shape[0]}; they must agree")
    name = tr("attention output")
    a, bad = read_answer(answer, name)
    if bad is not None:
        return bad
    d_k = q.shape[1]
    raw = q @ k.T                                     # (L, S)
    expected = _softmax_rows(raw / np.sqrt(d_k)) @ v  # (L, d_v)
    if a.shape == expected.shape and not np.all(np.isfinite(a)):
        return Verdict(False, tr("{name}: contains NaN or infinity. Subtract each row's largest score "
                                 "before `np.exp`.", name=name), "not_finite")
    if a.shape == expected.shape and np.allclose(a, expected, rtol=1e-5, atol=1e-8):
        return Verdict(True, tr("{name} matches, every entry.", name=name))
    weights = _softmax_rows(raw / np.sqrt(d_k))
    mistakes = [
        ("unscaled", _softmax_rows(raw) @ v,
         tr("this is the output without the scale: divide the scores by √d_k = √{d} before the "
            "softmax.", d=d_k)),
        ("divided_by_dk", _softmax_rows(raw / d_k) @ v,
         tr("you divided the scores by d_k = {d}; divide by its square root, √{d}.", d=d_k)),
        ("wrong_axis", _softmax_rows(raw / np.sqrt(d_k), axis=0) @ v,
         tr("your softmax ran down the columns. Take it along each row (axis=-1), so that each query's "
            "weights sum to 1.")),
        ("weights_only", weights,
         tr("these are the attention weights; multiply them by V to get the output.")),
        ("no_softmax", raw / np.sqrt(d_k) @ v,
         tr("you multiplied the scaled scores by V without the softmax in between.")),
    ]
    for code, wrong, why in mistakes:
        if a.shape == wrong.shape and np.allclose(a, wrong, rtol=1e-5, atol=1e-8):
            return Verdict(False, tr("{name}: {why}", name=name, why=why), code)
    if a.shape != expected.shape:
        return Verdict(False, tr("{name}: shape {got}, expected {want}: one row per query, as wide as "
                                 "V.", name=name, got=a.shape, want=expected.shape), "wrong_shape")
    if np.allclose(a, expected, rtol=0, atol=5.1e-3):
        return Verdict(False, tr("{name}: right to about 2 decimals. Pass the unrounded array, not a "
                                 "rounded copy.", name=name), "rounded")
    worst = np.unravel_index(np.argmax(np.abs(a - expected)), a.shape)
    return Verdict(False, tr("{name}: not yet; entry {at} is off by {diff:.3g}. Scale the scores by "
                             "1/√d_k, take the softmax along each row, then multiply by V.",
                             name=name, at=tuple(int(i) for i in worst),
                             diff=float(abs(a[worst] - expected[worst]))), "wrong_value")


__all__ += ["check_attention_output"]


# --- test-scores ---------------------------------------------------------------------------------

def check_rescaled_totals(answer, totals, n_subjects) -> Verdict:
    """Exercise `ex-test-scores-code`: exam totals divided by the factor that restores one subject's spread (√n).

    ``totals`` is the exercise's 1-d array of totals of ``n_subjects`` independent subjects; the
    expected answer, ``totals / √n_subjects``, is computed here. Recognised mistakes: ``unscaled``,
    ``divided_by_n`` (the average: over-corrected), ``centred`` (the class mean taken off as well),
    ``measured_sd`` (divided by the class's measured sd instead of the theory), ``wrong_factor`` (any
    other single divisor, e.g. 10·√n), ``wrong_shape``, ``wrong_value``. Never raises on the answer.
    """
    t = _input_array(totals, "totals", 1)
    n = positive_int("self-check set-up: n_subjects", n_subjects)
    name = tr("rescaled totals")
    a, bad = read_answer(answer, name)
    if bad is not None:
        return bad
    expected = t / np.sqrt(n)

    def close(x, y):
        return x.shape == y.shape and bool(np.allclose(x, y, rtol=1e-6, atol=1e-9))

    if close(a, expected):
        return Verdict(True, tr("{name} match: divided by √{n}.", name=name, n=n))
    sd = float(t.std())
    mistakes = [
        ("unscaled", t, tr("these are the totals themselves; divide them by the factor by which their "
                           "standard deviation grew.")),
        ("divided_by_n", t / n, tr("you divided by n = {n}: that gives the average score, whose spread "
                                   "is one subject's divided by √{n}. Divide by √{n} instead.", n=n)),
        ("centred", (t - t.mean()) / np.sqrt(n),
         tr("you also subtracted the class mean. That is harmless for a softmax, but this exercise asks "
            "only for the division by √{n}.", n=n)),
        ("measured_sd", t / sd, tr("you divided by the measured standard deviation of this class; use the "
                                   "theory instead: the spread of a total of n independent subjects "
                                   "grows like √n.")),
    ]
    for code, wrong, why in mistakes:
        if close(a, wrong):
            return Verdict(False, tr("{name}: {why}", name=name, why=why), code)
    if a.shape == expected.shape and np.all(np.isfinite(a)) and np.all(a != 0):
        factor = t / a                              # what the learner divided by, if one number
        if np.allclose(factor, np.median(factor), rtol=1e-6):
            return Verdict(False, tr("{name}: you divided every total by {c:.4g}. Divide by the factor by "
                                     "which the standard deviation of a total of {n} independent "
                                     "subjects grows: √{n} ≈ {r:.4g}.", name=name,
                                     c=float(np.median(factor)), n=n, r=float(np.sqrt(n))),
                           "wrong_factor")
    if a.shape != expected.shape:
        return Verdict(False, tr("{name}: shape {got}, expected {want}: one number per student.",
                                 name=name, got=a.shape, want=expected.shape), "wrong_shape")
    return Verdict(False, tr("{name}: not yet. Divide every total by the same number, the factor by which "
                             "the standard deviation of a total of {n} subjects grows.", name=name, n=n),
                   "wrong_value")


__all__ += ["check_rescaled_totals"]


# --- variance ------------------------------------------------------------------------------------

def _simulated_raw_scores(d_k, n, seed):
    """The raw scores q·k of ``n`` pairs drawn as Exercise `ex-variance-code` says, in the two layouts a learner
    writes: q and k as (n, d_k) arrays (or one (2, n, d_k) draw, the same numbers), or as (d_k, n)."""
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((n, d_k)), rng.standard_normal((n, d_k))
    rng = np.random.default_rng(seed)
    qt, kt = rng.standard_normal((d_k, n)), rng.standard_normal((d_k, n))
    return [(q * k).sum(axis=-1), (qt * kt).sum(axis=0)]


def check_scaled_variance(scores, d_k, n, seed) -> Verdict:
    """Exercise `ex-variance-code`: the learner's simulation, ``n`` scaled scores q·k/√d_k drawn with ``seed``.

    The check takes the learner's *array of scores*, not one number: it redraws the pairs from
    ``np.random.default_rng(seed)`` (q, then k, each ``(n, d_k)`` standard normal, or each
    ``(d_k, n)``) and compares score by score, so typing the theory value 1 does not pass. A right
    simulation's verdict also gives its variance against the theory (three standard errors,
    :func:`lib.simulate.variance_standard_error` with excess kurtosis 6/d_k). Recognised mistakes:
    ``one_number`` (a variance instead of the scores), ``unscaled`` (the raw scores),
    ``divided_by_dk``, ``not_this_seed`` (scores that are not the ones ``seed`` gives: another
    seed, another way of drawing, or no simulation), ``wrong_shape``, ``not_finite``,
    ``wrong_value``. Never raises on the answer; raises ``ValueError`` for a ``d_k``, ``n`` or
    ``seed`` that is not an int (``d_k`` >= 1, ``n`` >= 2, ``seed`` >= 0).
    """

    d_k, n, seed = (positive_int(f"self-check set-up: {what}", x, minimum=low)
                    for what, x, low in (("d_k", d_k, 1), ("n", n, 2), ("seed", seed, 0)))
    name = tr("your scaled scores")
    a, bad = read_answer(scores, name)
    if bad is not None:
        return bad
    if a.size == 1:
        return Verdict(False, tr("{name}: you gave one number. Pass the array of your {n} scaled scores "
                                 "(not their variance), so that the check can redo your simulation from "
                                 "the seed.", name=name, n=n), "one_number")
    if a.shape != (n,):
        return Verdict(False, tr("{name}: shape {shape}, expected ({n},): one scaled score per "
                                 "query-key pair. Sum the products over the d_k axis.",
                                 name=name, shape=a.shape, n=n), "wrong_shape")
    if not np.all(np.isfinite(a)):
        return Verdict(False, tr("{name}: contains NaN or infinity.", name=name), "not_finite")
    r = np.sqrt(d_k)
    for raw in _simulated_raw_scores(d_k, n, int(seed)):
        if np.allclose(a, raw / r, rtol=1e-6, atol=1e-9):
            x = float(a.var())
            se = variance_standard_error(1.0, n, 6.0 / d_k)
            if abs(x - 1.0) <= 3 * se:
                return Verdict(True, tr("{name} are the ones your seed gives, and their variance is "
                                        "{x:.4f}: within three standard errors ({band:.4f}) of the "
                                        "theory.", name=name, x=x, band=3 * se))
            return Verdict(False, tr("{name} are right, but their variance {x:.4f} is more than three "
                                     "standard errors ({band:.4f}) from the theory; with this seed that "
                                     "happens about 3 times in 1000. Try another seed.",
                                     name=name, x=x, band=3 * se), "unlucky_seed")
        if np.allclose(a, raw, rtol=1e-6, atol=1e-9):
            return Verdict(False, tr("{name}: these are the raw dot products (variance about d_k = {d}). "
                                     "Divide them by √{d}.", name=name, d=d_k), "unscaled")
        if np.allclose(a, raw / d_k, rtol=1e-6, atol=1e-9):
            return Verdict(False, tr("{name}: you divided by d_k = {d}; divide by √{d}.", name=name, d=d_k),
                           "divided_by_dk")
    return Verdict(False, tr("{name}: these are not the scores that `np.random.default_rng({seed})` gives. "
                             "Draw q, then k, each with `rng.standard_normal(({n}, {d}))`, multiply them "
                             "elementwise, sum over the last axis and divide by √{d}; pass the seed you "
                             "used as `seed=`.", name=name, seed=int(seed), n=n, d=d_k), "not_this_seed")


__all__ += ["check_scaled_variance"]


# --- practice ------------------------------------------------------------------------------------

def _as_shape(answer):
    """A shape the learner typed, (2, 3) or [2, 3], as a tuple of ints; None if it is not one."""
    try:
        t = tuple(answer)
    except TypeError:
        return None
    if not t or not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in t):
        return None
    return tuple(int(x) for x in t)


def check_scores_shape(answer, Q, K) -> Verdict:
    """Exercise `ex-practice-dot3`(1): the shape of ``Q Kᵀ`` for the exercise's ``Q`` (L, d_k) and ``K`` (S, d_k).

    Recognised mistakes: ``transposed`` (S, L), ``shape_of_q`` (L, d_k), ``not_a_shape``,
    ``wrong_shape``. Never raises on the answer.
    """
    q, k = _input_array(Q, "Q", 2), _input_array(K, "K", 2)
    if q.shape[1] != k.shape[1]:
        raise ValueError(f"self-check set-up: Q has d_k = {q.shape[1]} and K has {k.shape[1]}")
    name = tr("shape of Q Kᵀ")
    if answer is None or answer is ...:
        return Verdict(False, tr("{name}: no answer yet. Replace `None` with your result and run the "
                                 "cell again.", name=name), "missing")
    got = _as_shape(answer)
    if got is None:
        return Verdict(False, tr("{name}: give the shape as two whole numbers, e.g. `(rows, columns)`.",
                                 name=name), "not_a_shape")
    (L, d), S = q.shape, k.shape[0]
    if got == (L, S):
        return Verdict(True, tr("{name} = {shape}: one row per query, one column per key.",
                                name=name, shape=got))
    if got == (S, L):
        return Verdict(False, tr("{name}: {shape} has one row per key. Q Kᵀ has one row per query "
                                 "(the rows of Q) and one column per key.", name=name, shape=got),
                       "transposed")
    if got in ((L, d), (S, d)):
        return Verdict(False, tr("{name}: {shape} is the shape of Q or K itself. The product runs over "
                                 "the d_k axis, which disappears.", name=name, shape=got), "shape_of_q")
    return Verdict(False, tr("{name}: not {shape}. Count the rows of Q and the rows of K.",
                             name=name, shape=got), "wrong_shape")


def check_naive_softmax(answer, scores) -> Verdict:
    """Exercise `ex-practice-overflow`(1): what the naive softmax ``np.exp(s) / np.exp(s).sum()`` returns in float64
    for the exercise's ``scores`` (large enough that ``np.exp`` overflows).

    The expected result is computed here (NaN where the exponential overflows). Recognised mistakes:
    ``safe_softmax`` (the softmax computed the safe way), ``exponentials`` (inf: not yet divided),
    ``wrong_shape``, ``wrong_value``. Never raises on the answer.
    """
    s = _input_array(scores, "scores", 1)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(s)
        expected = e / e.sum()
    name = tr("naive softmax")
    a, bad = read_answer(answer, name)
    if bad is not None:
        return bad
    if a.shape != s.shape:
        return Verdict(False, tr("{name}: shape {got}, expected {want}: one weight per score.",
                                 name=name, got=a.shape, want=s.shape), "wrong_shape")
    same = (np.isnan(a) & np.isnan(expected)) | (a == expected) | np.isclose(a, expected, rtol=1e-6)
    if np.all(same):
        return Verdict(True, tr("{name}: right. `np.exp` of these scores is `inf` in float64 (it "
                                "overflows above about 709.8), and `inf / inf` is `nan`.", name=name))
    if np.all(np.isfinite(a)) and np.allclose(a, _softmax_rows(s), atol=6e-4):
        return Verdict(False, tr("{name}: these are the right weights, computed the safe way. This part "
                                 "asks what the naive formula returns in float64, before any "
                                 "subtraction.", name=name), "safe_softmax")
    if np.all(np.isinf(a) | np.isinf(e)) and np.array_equal(np.isinf(a), np.isinf(e)):
        return Verdict(False, tr("{name}: these are the exponentials. Now divide them by their sum, "
                                 "as the naive formula does: what is `inf / inf`?", name=name),
                       "exponentials")
    return Verdict(False, tr("{name}: not yet. Run `np.exp` on one of the scores and see what float64 "
                             "gives.", name=name), "wrong_value")


def check_float16_dk(answer, limit, n_sd=3) -> Verdict:
    """Exercise `ex-practice-overflow`(3): from which d_k unscaled unit-variance scores pass the float16 limit ``limit``
    of the exponential at ``n_sd`` standard deviations: d_k > (limit / n_sd)².

    Passes within 5 % of (limit / n_sd)² (the limit is given to one decimal), or the next power of
    two above it. Recognised mistakes: ``no_square`` (limit / n_sd: the standard deviation, not d_k),
    ``one_sd`` (limit²: one standard deviation instead of ``n_sd``), ``wrong_value``.
    """
    lim = float(limit)
    if not np.isfinite(lim) or lim <= 0:
        raise ValueError(f"self-check set-up: limit must be a positive number; got {limit!r}")
    name = "d_k"
    a, bad = read_answer(answer, name)
    if bad is not None:
        return bad
    if a.size != 1 or not np.isfinite(a).all():
        return Verdict(False, tr("{name}: give one number.", name=name), "not_a_number")
    x = float(a.reshape(()))
    t = (lim / n_sd) ** 2
    p2 = 2.0 ** np.ceil(np.log2(t))
    if abs(x / t - 1) <= 0.05 or x == p2:
        return Verdict(True, tr("{name} = {x:g}: right. From there on, {k} standard deviations of the raw "
                                "scores, {k}·√d_k, pass the limit.", name=name, x=x, k=n_sd))
    if abs(x / (lim / n_sd) - 1) <= 0.05:
        return Verdict(False, tr("{name}: {x:g} is the standard deviation the scores may have, √d_k; "
                                 "square it to get d_k.", name=name, x=x), "no_square")
    if abs(x / lim ** 2 - 1) <= 0.05:
        return Verdict(False, tr("{name}: {x:g} is where one standard deviation reaches the limit; the "
                                 "exercise asks for {k}.", name=name, x=x, k=n_sd), "one_sd")
    return Verdict(False, tr("{name}: not yet. The raw scores have standard deviation √d_k; find the d_k "
                             "at which {k}·√d_k equals the limit.", name=name, k=n_sd), "wrong_value")


def _pair(answer_a, answer_b, name):
    out = []
    for x in (answer_a, answer_b):
        a, bad = read_answer(x, name)
        if bad is not None:
            return None, bad
        if a.size != 1 or not np.isfinite(a).all():
            return None, Verdict(False, tr("{name}: give one number for each part.", name=name), "not_a_number")
        out.append(float(a.reshape(())))
    return out, None


def check_doubled_scores(raw_factor, scaled_factor, q, K, *, c: float = 2.0) -> Verdict:
    """Exercise `ex-practice-predict`(1): by what factor the raw and the scaled scores of ``q`` against the rows of
    ``K`` change when every component of ``q`` and ``K`` is multiplied by ``c``. The factors are
    computed here from the exercise's vectors (both c², because d_k does not change). Recognised
    mistakes: ``times_c`` (c: only one side scaled), ``scaled_unchanged`` (1 for the scaled scores:
    the scale does not undo the size of the components), ``wrong_value``."""
    qa, ka = _input_array(q, "q", 1), _input_array(K, "K", 2)
    raw = ka @ qa
    i = int(np.argmax(np.abs(raw)))
    want_raw = float(((c * ka) @ (c * qa))[i] / raw[i])
    d_k = qa.size
    want_scaled = float((((c * ka) @ (c * qa)) / np.sqrt(d_k))[i] / (raw[i] / np.sqrt(d_k)))
    name = tr("factors")
    got, bad = _pair(raw_factor, scaled_factor, name)
    if bad is not None:
        return bad
    ok = [abs(g / w - 1) <= 1e-3 for g, w in zip(got, (want_raw, want_scaled))]
    if all(ok):
        return Verdict(True, tr("{name}: right, both. Each product q_i k_i grows by {c:g}·{c:g}, and the "
                                "scale depends only on d_k, which did not change.", name=name, c=c))
    if any(abs(g / c - 1) <= 1e-3 for g in got):
        return Verdict(False, tr("{name}: not yet. Both q and k are multiplied by {c:g}; what happens to "
                                 "each product q_i k_i?", name=name, c=c), "times_c")
    if ok[0] and abs(got[1] - 1) <= 1e-3:
        return Verdict(False, tr("{name}: the raw factor is right. The scaled scores divide by √d_k, and "
                                 "d_k did not change: the scale does not undo the size of the "
                                 "components.", name=name), "scaled_unchanged")
    return Verdict(False, tr("{name}: not yet. Write one score as Σ q_i k_i and multiply every q_i and "
                             "k_i by {c:g}.", name=name, c=c), "wrong_value")


def check_sd_growth(raw_growth, scaled_growth, d_from, d_to) -> Verdict:
    """Exercise `ex-practice-predict`(2): the factor by which the standard deviation of raw (√(d_to/d_from)) and of
    scaled (1) scores of unit-variance vectors grows from ``d_from`` to ``d_to`` components.
    Recognised mistakes: ``variance_ratio`` (d_to/d_from: the variance, not the standard deviation),
    ``scaled_grows``, ``wrong_value``."""
    d_from, d_to = (positive_int(f"self-check set-up: {what}", x)
                    for what, x in (("d_from", d_from), ("d_to", d_to)))
    want = float(np.sqrt(d_to / d_from))
    name = tr("growth factors")
    got, bad = _pair(raw_growth, scaled_growth, name)
    if bad is not None:
        return bad
    raw_ok, scaled_ok = abs(got[0] / want - 1) <= 0.01, abs(got[1] - 1) <= 0.01
    if raw_ok and scaled_ok:
        return Verdict(True, tr("{name}: right. The raw scores' standard deviation is √d_k; the scaled "
                                "scores' stays 1.", name=name))
    if abs(got[0] / (d_to / d_from) - 1) <= 0.01:
        return Verdict(False, tr("{name}: {x:g} is how much the variance grows; the standard deviation is "
                                 "its square root.", name=name, x=got[0]), "variance_ratio")
    if raw_ok:
        return Verdict(False, tr("{name}: the raw factor is right. Dividing by √d_k undoes exactly that "
                                 "growth: what is left for the scaled scores?", name=name), "scaled_grows")
    return Verdict(False, tr("{name}: not yet. The variance of q·k is d_k ({d1} and {d2} here); the "
                             "standard deviation is its square root.", name=name, d1=int(d_from),
                             d2=int(d_to)), "wrong_value")


def check_weight_over_dk(weight, n_keys, d_k) -> Verdict:
    """Exercise `ex-practice-predict`(3): the typical weight of one of ``n_keys`` keys when unit-variance scores at
    ``d_k`` are divided by d_k (standard deviation 1/√d_k): nearly uniform, about 1/n_keys.
    Passes within 0.2/n_keys of 1/n_keys. Recognised mistakes: ``one_hot`` (near 1 or 0: what
    unscaled scores do), ``wrong_value``."""
    n_keys, d_k = (positive_int(f"self-check set-up: {what}", x, minimum=2)
                   for what, x in (("n_keys", n_keys), ("d_k", d_k)))
    name = tr("weight")
    a, bad = read_answer(weight, name)
    if bad is not None:
        return bad
    if a.size != 1 or not np.isfinite(a).all():
        return Verdict(False, tr("{name}: give one number, a typical weight.", name=name), "not_a_number")
    x, u = float(a.reshape(())), 1.0 / n_keys
    if abs(x - u) <= 0.2 * u:
        return Verdict(True, tr("{name} = {x:.3g}: right, nearly uniform. The scores divided by d_k have "
                                "standard deviation 1/√{d} and hardly differ.", name=name, x=x, d=int(d_k)))
    if x > 0.9 or x < 0.1 * u:
        return Verdict(False, tr("{name}: {x:.3g} is what one-hot attention gives, as with unscaled scores "
                                 "at a large d_k. Dividing by d_k shrinks the scores: how much do they "
                                 "still differ?", name=name, x=x), "one_hot")
    return Verdict(False, tr("{name}: not yet. How large is the standard deviation of the scores divided "
                             "by d_k, and what does the softmax do with scores that hardly differ?",
                             name=name), "wrong_value")


__all__ += ["check_scores_shape", "check_naive_softmax", "check_float16_dk", "check_doubled_scores",
            "check_sd_growth", "check_weight_over_dk"]


# --- softmax-saturation --------------------------------------------------------------------------

def check_temperature_jacobian(answer, z, taus) -> Verdict:
    """Exercise `ex-softmax-saturation-temp`: the largest entry of ∂p/∂z for p = softmax(z/τ), one number per τ in ``taus``.

    The expected values, max_ij |J_ij(softmax(z/τ))| / τ (chapter `softmax-saturation`, eq. eq-temperature-jacobian), are
    computed here from the exercise's ``z`` (1-d, at least 2 finite entries) and ``taus`` (a positive
    number or a 1-d sequence of them). Recognised mistakes (``Verdict.mistake``): ``no_factor`` (the
    Jacobian with respect to z/τ, without the chain rule's 1/τ), ``times_tau`` (multiplied by τ),
    ``no_temperature`` (the Jacobian at z itself), ``rounded`` (right to about 2 digits only),
    ``wrong_shape``, ``wrong_value``. Never raises on the answer; raises ``ValueError``/``TypeError`` on
    bad ``z`` or ``taus``.
    """
    if isinstance(z, (str, bytes)) or isinstance(taus, (str, bytes)) or z is None or taus is None:
        raise TypeError("self-check set-up: z and taus must be numbers")
    zz = np.asarray(z, dtype=float)
    tt = np.asarray(taus, dtype=float)
    if zz.ndim != 1 or zz.size < 2 or not np.all(np.isfinite(zz)):
        raise ValueError(f"self-check set-up: z must be a 1-d array of at least 2 finite numbers; got {z!r}")
    if tt.ndim > 1 or tt.size == 0 or not np.all(np.isfinite(tt)) or np.any(tt <= 0):
        raise ValueError(f"self-check set-up: taus must be a positive number or a 1-d list of them; got {taus!r}")

    def largest(t, factor):
        e = np.exp(zz / t - np.max(zz / t))
        p = e / e.sum()
        return float(np.abs(np.diag(p) - np.outer(p, p)).max()) * factor

    expected = np.array([largest(t, 1 / t) for t in tt.ravel()]).reshape(tt.shape)
    name = tr("largest entry of ∂p/∂z")
    a, bad = read_answer(answer, name, finite=True)
    if bad is not None:
        return bad
    if a.shape != expected.shape:
        return Verdict(False, tr("{name}: expected {n} number(s), one per τ in the order given; got shape "
                                 "{shape}.", name=name, n=expected.size, shape=a.shape), "wrong_shape")
    if np.allclose(a, expected, rtol=1e-3, atol=0):
        return Verdict(True, tr("{name}: right for every τ.", name=name))
    wrong = [
        ("no_factor", np.array([largest(t, 1.0) for t in tt.ravel()]).reshape(tt.shape),
         tr("these are the entries of the Jacobian with respect to z/τ, the softmax's own input. The "
            "question asks for the derivative with respect to z: apply the chain rule once more.")),
        ("times_tau", np.array([largest(t, t) for t in tt.ravel()]).reshape(tt.shape),
         tr("the chain rule's factor is on the wrong side: differentiate z/τ with respect to z.")),
        ("no_temperature", np.full(tt.shape, largest(1.0, 1.0)),
         tr("these are the values at τ = 1 for every τ: divide the scores by τ before the softmax.")),
    ]
    for code, w, why in wrong:
        if np.allclose(a, w, rtol=1e-3, atol=0):
            return Verdict(False, tr("{name}: {why}", name=name, why=why), code)
    rounded = any(np.allclose(a, np.round(expected, k), rtol=1e-9, atol=1e-12) for k in range(1, 6))
    if rounded or np.allclose(a, expected, rtol=2e-2, atol=0):
        return Verdict(False, tr("{name}: right, but rounded too far for the check (3 significant digits "
                                 "are needed). Pass the unrounded numbers.", name=name), "rounded")
    i = int(np.argmax(np.abs(a - expected) / np.abs(expected)))
    return Verdict(False, tr("{name}: not yet; the value for τ = {tau:g} is off by more than 2 %. Work "
                             "through the formula step by step: the softmax of z/τ, the largest entry "
                             "of diag(p) − ppᵀ, then the chain rule.", name=name, tau=float(tt.ravel()[i])),
                   "wrong_value")


__all__ += ["check_temperature_jacobian"]


# --- training ------------------------------------------------------------------------------------

def check_steps_to_threshold(answer, loss, threshold=1.0, window=10) -> Verdict:
    """Exercise `ex-training-threshold`: the first step t at which the mean of ``loss[t - window + 1 : t + 1]`` is below ``threshold``.

    The expected step is computed here from the exercise's ``loss`` (1-d, finite), ``threshold`` and
    ``window`` (the same rule as ``lib.training.steps_to_threshold``, which returns ``len(loss)`` when
    the threshold is never reached). Recognised mistakes: ``window_start`` (the first step of the window,
    not the last), ``off_by_one``, ``no_average`` (the first single step below the threshold),
    ``not_integer``, ``wrong_shape``, ``wrong_value``. Never raises on the answer.
    """
    x = np.asarray(loss, dtype=float) if not isinstance(loss, (str, bytes)) else None
    if x is None or x.ndim != 1 or x.size == 0 or not np.all(np.isfinite(x)):
        raise ValueError("self-check set-up: loss must be a non-empty 1-d array of finite numbers")
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or not 1 <= window <= x.size:
        raise ValueError(f"self-check set-up: window must be an integer from 1 to len(loss); got {window!r}")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.floating, np.integer)) \
            or not np.isfinite(threshold):
        raise TypeError(f"self-check set-up: threshold must be a finite number; got {threshold!r}")

    def first(values, w):
        moving = np.convolve(values, np.ones(w) / w, mode="valid")    # moving[i] = mean(values[i : i+w])
        below = np.flatnonzero(moving < threshold)
        return int(below[0] + w - 1) if below.size else int(values.size)

    expected = first(x, window)
    name = tr("steps to loss < {t:g}", t=float(threshold))
    value, bad = read_scalar(answer, name, integer=True)
    if bad is not None:
        return bad
    if value != round(value):
        return Verdict(False, tr("{name}: a step number is a whole number; got {v:g}.", name=name, v=value),
                       "not_integer")
    value = int(round(value))
    if value == expected:
        return Verdict(True, tr("{name}: {v}, right.", name=name, v=value))
    if expected < x.size and value == expected - (window - 1):
        return Verdict(False, tr("{name}: that is the first step of the window; the measure counts the "
                                 "last step of the first window whose mean is below the threshold.",
                                 name=name), "window_start")
    if expected < x.size and value == first(x, 1) and first(x, 1) != expected:
        return Verdict(False, tr("{name}: that is the first single step below the threshold; the measure "
                                 "averages {w} consecutive steps first.", name=name, w=window), "no_average")
    if abs(value - expected) == 1:
        return Verdict(False, tr("{name}: off by one. Steps are counted from 0, and the window that ends "
                                 "at step t holds steps t − {k} to t.", name=name, k=window - 1), "off_by_one")
    return Verdict(False, tr("{name}: not yet. Average each run of {w} consecutive losses and find the first "
                             "average below {t:g}; report the step at which that window ends.",
                             name=name, w=window, t=float(threshold)), "wrong_value")


__all__ += ["check_steps_to_threshold"]


# --- tuning --------------------------------------------------------------------------------------

def _sweep_results(results):
    """The exercise's sweep: {(scale, lr): [results, one per seed]} with scaled (None) and unscaled (1.0)."""
    if not isinstance(results, dict) or not results:
        raise TypeError(f"self-check set-up: results must be a dict {{(scale, lr): [TrainResult, ...]}}; "
                        f"got {type(results).__name__}")
    for key, runs in results.items():
        if not (isinstance(key, tuple) and len(key) == 2 and key[0] in (None, 1.0)):
            raise ValueError(f"self-check set-up: results' keys must be (scale, lr) with scale None or 1.0; "
                             f"got {key!r}")
        if not runs or not all(hasattr(r, "steps_to") for r in runs):
            raise TypeError(f"self-check set-up: results[{key!r}] must be a list of training results")
    if {s for s, _ in results} != {None, 1.0}:
        raise ValueError("self-check set-up: results must hold both the scaled (None) and unscaled (1.0) runs")
    return results


def _median_steps(runs, threshold):
    return float(np.median([r.steps_to(threshold) for r in runs]))


def _best_ratio(results, threshold):
    """Unscaled over scaled median steps to ``threshold``, each model at its own fastest rate."""
    best = {}
    for scale in (None, 1.0):
        rates = sorted(lr for s, lr in results if s == scale)
        best[scale] = min(rates, key=lambda lr: _median_steps(results[scale, lr], threshold))
    return (_median_steps(results[1.0, best[1.0]], threshold)
            / _median_steps(results[None, best[None]], threshold))


def check_best_against_best(answer, results, threshold=1.0) -> Verdict:
    """Exercise `ex-tuning-best`: unscaled over scaled median steps to ``threshold``, each model at its fastest rate.

    ``results`` maps ``(scale, lr)`` to one training result per seed (``scale`` ``None``: scaled, ``1.0``:
    unscaled), as the `tuning` chapter's sweeps do; a result's ``steps_to(threshold)`` is its steps to a loss below
    ``threshold``. Recognised mistakes: ``inverted`` (scaled over unscaled), ``shared_rate`` (both models
    at one rate they share), ``threshold_one`` (steps to 1 nat, the threshold the page prints),
    ``wrong_shape``, ``wrong_value``. Never raises on the answer.
    """
    results = _sweep_results(results)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.floating, np.integer)) \
            or not np.isfinite(threshold) or threshold <= 0:
        raise TypeError(f"self-check set-up: threshold must be a positive finite number; got {threshold!r}")
    expected = _best_ratio(results, threshold)
    name = tr("best-against-best ratio")
    value, bad = read_scalar(answer, name)
    if bad is not None:
        return bad

    def near(x):
        return bool(np.isclose(value, x, rtol=1e-6, atol=0.0))
    if near(expected):
        return Verdict(True, tr("{name}: {v:.2f}, right: each model at its own fastest rate.", name=name, v=value))
    if near(1.0 / expected):
        return Verdict(False, tr("{name}: that is scaled over unscaled; divide the unscaled model's steps by the "
                                 "scaled model's.", name=name), "inverted")
    shared = sorted({lr for s, lr in results if s is None} & {lr for s, lr in results if s == 1.0})
    for lr in shared:
        at_lr = _median_steps(results[1.0, lr], threshold) / _median_steps(results[None, lr], threshold)
        if near(at_lr) and not near(expected):
            return Verdict(False, tr("{name}: that compares both models at the one rate {lr:g}; find each "
                                     "model's own fastest rate first.", name=name, lr=lr), "shared_rate")
    if threshold != 1.0 and near(_best_ratio(results, 1.0)):
        return Verdict(False, tr("{name}: that is the ratio for 1 nat, the one the page prints; time the "
                                 "steps to {t:g} nats instead.", name=name, t=float(threshold)), "threshold_one")
    return Verdict(False, tr("{name}: not yet. For each model, take the rate with the fewest median steps to "
                             "{t:g} nats; then divide the unscaled model's median by the scaled model's.",
                             name=name, t=float(threshold)), "wrong_value")


__all__ += ["check_best_against_best"]


# --- caveats -------------------------------------------------------------------------------------

#: Tolerances of :func:`check_correlated_score_moments`: answers rounded to three decimals pass.
_MOMENT_RTOL, _MOMENT_ATOL = 1e-3, 6e-4


def check_correlated_score_moments(answer, d_k, rho, *, sigma_q=1.0, sigma_k=1.0, scaled=True,
                                   name: str | None = None) -> Verdict:
    """Check ``[mean, variance]`` of the score ``q·k/√d_k`` (``scaled=False``: of ``q·k``) (chapter `caveats`).

    The inputs are the exercise's: ``d_k`` components, each pair (q_i, k_i) jointly normal with mean 0,
    standard deviations ``sigma_q``, ``sigma_k`` and correlation ``rho``, the pairs independent. The
    expected values follow from Isserlis' theorem: E[q·k] = d_k ρ σ_qσ_k and
    Var(q·k) = d_k σ_q²σ_k²(1 + ρ²); dividing q·k by √d_k divides the mean by √d_k and the variance
    by d_k. They are computed here, so no notebook cell holds them.

    A wrong answer gets the hint for the mistake it shows (``Verdict.mistake``): ``unscaled`` (the raw
    moments), ``scaled`` (scaled moments where the raw ones were asked), ``assumed_independence``
    (ρ = 0), ``forgot_rho_squared`` (variance without the 1 + ρ²), ``unscaled_forgot_rho_squared``,
    ``rho_not_squared`` (1 + ρ), ``variance_divided_by_sqrt_dk``, ``mean_divided_by_dk``,
    ``standard_deviation`` (the SD instead of the variance), ``swapped`` ([variance, mean]); otherwise
    ``wrong_mean``, ``wrong_variance`` or ``wrong_both``, each with a hint, never with the expected
    numbers. ``missing``, ``unreadable``, ``wrong_shape``, ``not_finite`` for answers that are not two
    numbers. Answers rounded to three decimals pass.

    Never raises on ``answer``; raises ``TypeError``/``ValueError`` naming the fault when ``d_k``,
    ``rho``, ``sigma_q`` or ``sigma_k`` are not valid inputs.
    """
    d_k = positive_int("self-check set-up: d_k", d_k)
    if isinstance(rho, bool) or not isinstance(rho, (int, float, np.integer, np.floating)):
        raise TypeError(f"self-check set-up: rho must be a number; got {type(rho).__name__}")
    if not (np.isfinite(rho) and -1.0 <= rho <= 1.0):
        raise ValueError(f"self-check set-up: rho must lie in [-1, 1]; got {rho!r}")
    sq, sk = (positive_number("self-check set-up: sigma_q", sigma_q),
              positive_number("self-check set-up: sigma_k", sigma_k))
    d, r, s2 = int(d_k), float(rho), (sq * sk) ** 2
    name = name or tr("mean and variance")

    if answer is None or answer is ...:
        return Verdict(False, tr("{name}: no answer yet. Replace `None` with your two numbers and run the "
                                 "cell again.", name=name), "missing")
    try:
        if hasattr(answer, "detach"):                      # a torch tensor
            answer = answer.detach().cpu().double().numpy()
        a = np.asarray(answer, dtype=float).ravel()
    except (TypeError, ValueError) as exc:
        return Verdict(False, tr("{name}: could not read your answer as numbers ({err}). Give two numbers, "
                                 "for example np.array([mean, variance]).", name=name, err=exc), "unreadable")
    if a.size != 2:
        return Verdict(False, tr("{name}: give two numbers, [mean, variance]; your answer has {n}.",
                                 name=name, n=a.size), "wrong_shape")
    if not np.all(np.isfinite(a)):
        return Verdict(False, tr("{name}: your answer contains NaN or infinity.", name=name), "not_finite")

    raw = np.array([d * r * sq * sk, d * s2 * (1 + r * r)])
    div = np.array([np.sqrt(d), d]) if scaled else np.ones(2)
    expected = raw / div

    def close(x, y):
        return bool(np.allclose(x, y, rtol=_MOMENT_RTOL, atol=_MOMENT_ATOL))

    if close(a, expected):
        return Verdict(True, tr("{name}: both numbers match (to about three decimals).", name=name))
    m, v = expected
    indep = np.array([0.0, d * s2]) / div
    no_rho2 = np.array([m, d * s2 / div[1]])
    mistakes = []
    if scaled:
        mistakes.append(("unscaled", raw, tr(
            "these are the mean and variance of the raw score q·k. Dividing q·k by √d_k divides its mean by "
            "√d_k and its variance by d_k (scaling by c scales the variance by c²).")))
        mistakes.append(("unscaled_forgot_rho_squared", np.array([raw[0], d * s2]), tr(
            "two things: these are moments of the raw score q·k (divide the mean by √d_k and the variance "
            "by d_k), and the variance misses the factor 1 + ρ² that the correlation adds.")))
        mistakes.append(("variance_divided_by_sqrt_dk", np.array([m, raw[1] / np.sqrt(d)]), tr(
            "your mean is right, but you divided the variance by √d_k. Scaling a variable by c scales its "
            "variance by c², so dividing q·k by √d_k divides the variance by d_k.")))
        mistakes.append(("mean_divided_by_dk", np.array([raw[0] / d, v]), tr(
            "your variance is right, but you divided the mean by d_k. The score is q·k/√d_k, so its mean "
            "is E[q·k] divided by √d_k.")))
    else:
        mistakes.append(("scaled", raw / np.array([np.sqrt(d), d]), tr(
            "these are the moments of the scaled score q·k/√d_k; this question asks for the raw score "
            "q·k.")))
    mistakes.append(("assumed_independence", indep, tr(
        "these are the moments for independent components (ρ = 0). With correlation ρ each product q_i·k_i "
        "has mean ρσ_qσ_k, so the mean grows like d_k, and the variance of each product is "
        "σ_q²σ_k²(1 + ρ²).")))
    mistakes.append(("forgot_rho_squared", no_rho2, tr(
        "your mean is right, but the variance misses the ρ² term. For a correlated normal pair, "
        "E[q_i²k_i²] = σ_q²σ_k²(1 + 2ρ²) (Isserlis' theorem), so Var(q_i·k_i) = σ_q²σ_k²(1 + ρ²), not "
        "σ_q²σ_k² as for independent components.")))
    mistakes.append(("rho_not_squared", np.array([m, d * s2 * (1 + abs(r)) / div[1]]), tr(
        "your mean is right, but the variance has 1 + ρ where it needs 1 + ρ² (from Isserlis' theorem: "
        "E[q_i²k_i²] = σ_q²σ_k²(1 + 2ρ²), minus the squared mean ρ²σ_q²σ_k²).")))
    mistakes.append(("standard_deviation", np.array([m, np.sqrt(v)]), tr(
        "your mean is right; your second number looks like the standard deviation. The exercise asks for "
        "the variance, its square.")))
    mistakes.append(("swapped", expected[::-1], tr(
        "your numbers are right but in the order [variance, mean]; put the mean first.")))
    for code, wrong, why in mistakes:
        if not close(wrong, expected) and close(a, wrong):
            return Verdict(False, tr("{name}: {why}", name=name, why=why), code)
    mean_ok, var_ok = close(a[0], m), close(a[1], v)
    hint_mean = tr("E[q·k] = d_k ρ σ_qσ_k for the raw score; divide it by √d_k for the scaled one.") \
        if scaled else tr("E[q·k] = d_k ρ σ_qσ_k.")
    hint_var = tr("Var(q·k) = d_k σ_q²σ_k²(1 + ρ²) for the raw score; dividing q·k by √d_k divides the "
                  "variance by d_k.") if scaled else tr("Var(q·k) = d_k σ_q²σ_k²(1 + ρ²).")
    if mean_ok:
        return Verdict(False, tr("{name}: your mean is right; your variance is not yet. Hint: {hint}",
                                 name=name, hint=hint_var), "wrong_variance")
    if var_ok:
        return Verdict(False, tr("{name}: your variance is right; your mean is not yet. Hint: {hint}",
                                 name=name, hint=hint_mean), "wrong_mean")
    return Verdict(False, tr("{name}: neither number matches yet. Hint: start from one pair, "
                             "E[q_i·k_i] = ρσ_qσ_k and Var(q_i·k_i) = σ_q²σ_k²(1 + ρ²); add up the d_k "
                             "independent pairs{then}.", name=name,
                             then=tr(", then divide the mean by √d_k and the variance by d_k") if scaled else ""),
                   "wrong_both")


__all__ += ["check_correlated_score_moments"]


# --- multi-head ----------------------------------------------------------------------------------

__all__ += ["check_mha_params"]


def check_mha_params(answer, d_model, num_heads, *, bias: bool = True, name: str | None = None) -> Verdict:
    """Exercise `ex-multi-head-params`: the number of parameters of ``lib.MultiHeadAttention(d_model, num_heads)``.

    The expected count, 4·d_model² (+ 4·d_model with ``bias``), is computed here from the exercise's
    inputs, so no notebook cell holds it.  Recognised mistakes (``Verdict.mistake``): ``"no_biases"``
    (the four matrices only), ``"three_projections"`` (W_Q, W_K, W_V but not W_O), ``"one_head"``
    (matrices of one head, d_model × d_k), ``"extra_biases"`` (biases counted where ``bias=False``).
    Never raises on the answer; raises ``ValueError``/``TypeError`` on bad inputs.
    """
    d_model, num_heads = (positive_int(f"check_mha_params: {what}", v)
                          for what, v in (("d_model", d_model), ("num_heads", num_heads)))
    if d_model % num_heads:
        raise ValueError(f"check_mha_params: d_model = {d_model} is not divisible by num_heads = {num_heads}")
    if not isinstance(bias, bool):
        raise TypeError(f"check_mha_params: bias must be True or False; got {type(bias).__name__}")
    name = name or tr("parameter count")
    d, d_k = int(d_model), int(d_model) // int(num_heads)
    b = 1 if bias else 0
    expected = 4 * d * d + 4 * d * b
    mistakes = [
        ("no_biases", 4 * d * d,
         tr("this counts the four weight matrices W_Q, W_K, W_V, W_O but not their bias vectors (one of "
            "length d_model per matrix).")),
        ("three_projections", 3 * d * d + 3 * d * b,
         tr("this counts W_Q, W_K and W_V; the output map W_O is a d_model × d_model matrix too.")),
        ("three_projections", 3 * d * d,
         tr("this counts the weights of W_Q, W_K and W_V only; add W_O and the four bias vectors.")),
        ("one_head", 4 * d * d_k + 4 * d_k * b,
         tr("this is the size of one head's slices (d_model × d_k each). The layer holds all h heads: "
            "each matrix is d_model × d_model.")),
    ]
    if not bias:
        mistakes.append(("extra_biases", 4 * d * d + 4 * d,
                         tr("this layer has no biases (bias=False): count the four matrices only.")))

    v = check_number(answer, expected, name=name, rtol=0, atol=0.5)
    if v.ok:
        return v
    try:
        a = as_array(answer)
    except Exception:  # noqa: BLE001 - check_number has already explained an unreadable answer
        return v
    if a.shape != () or not np.isfinite(a):
        return v                       # missing, the wrong shape or NaN: as check_number says
    for code, wrong, why in mistakes:
        if wrong != expected and abs(float(a) - wrong) <= 0.5:
            return Verdict(False, tr("{name}: {why}", name=name, why=why), code)
    return Verdict(False, " ".join((v.message, tr("Hint: work it out from the four d_model × d_model "
                                                  "matrices and their biases; h does not appear."))))


# --- speed ----------------------------------------------------------------------------------------
__all__ += ["check_logsumexp"]


def _row_of_numbers(x, what):
    """The exercise's input row as a 1-D float64 array; ValueError/TypeError on bad *inputs*."""
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"self-check set-up: {what} is not a row of numbers ({exc})") from None
    if a.ndim != 1 or a.size == 0 or not np.all(np.isfinite(a)):
        raise ValueError(f"self-check set-up: {what} must be a non-empty 1-D row of finite numbers; "
                         f"got shape {a.shape}")
    return a


def check_logsumexp(answer, x, *, block: int = 3) -> Verdict:
    """Exercise `ex-speed-code`: ``answer`` should be ln Σ_j e^{x_j}, found with the online softmax in blocks.

    The expected value is computed here from ``x`` (two passes, shifted by the maximum). Recognises
    the usual slip of the online version, forgetting to rescale the old sum by e^{m_old - m_new}
    when a block raises the maximum, and the answer m alone (the log of the sum left out).
    """
    x = _row_of_numbers(x, "x")
    block = positive_int("self-check set-up: block", block)
    m = float(x.max())
    expected = m + float(np.log(np.exp(x - m).sum()))
    name = tr("log-sum-exp")
    if answer is None or answer is ...:
        return Verdict(False, tr("log-sum-exp: no answer yet. Put your number in my_lse and run the cell "
                                 "again."), "missing")
    verdict = check_number(answer, expected, name=name, rtol=1e-9, atol=1e-9)
    if verdict.ok or not np.isfinite(_float_or_nan(answer)):
        return verdict
    got = _float_or_nan(answer)
    # the slip: the old sum is not rescaled when a block raises the maximum
    m_run, l_run = -np.inf, 0.0
    for j0 in range(0, x.size, int(block)):
        b = x[j0:j0 + int(block)]
        m_new = max(m_run, float(b.max()))
        l_run = l_run + float(np.exp(b - m_new).sum())
        m_run = m_new
    if abs(got - (m_run + np.log(l_run))) < 1e-9 * max(1.0, abs(got)):
        return Verdict(False, tr("log-sum-exp: {got:.6g} is too large. When a block raises the maximum from "
                                 "m_old to m_new, multiply the old l by exp(m_old - m_new) before adding the "
                                 "new terms.", got=got), "no_rescale")
    if abs(got - m) < 1e-9 * max(1.0, abs(m)):
        return Verdict(False, tr("log-sum-exp: {got:.6g} is only the maximum m; add log(l).", got=got), "max_only")
    return Verdict(False, tr("log-sum-exp: you have {got:.6g}; it is not ln of the sum of e^x. Keep m, the "
                             "largest score so far, and l, the sum of exp(x - m) so far; the answer is "
                             "m + log(l).", got=got), None)


def _float_or_nan(answer):
    try:
        a = np.asarray(answer, dtype=np.float64)
        return float(a) if a.shape == () else float("nan")
    except (TypeError, ValueError):
        return float("nan")


# --- real-code -----------------------------------------------------------------------------------
__all__ += ["check_attention_function"]


def check_attention_function(fn, *, expected=None, backend: str = "numpy", batch_dims: tuple = ()) -> Verdict:
    """Exercises 10.x: does the learner's ``fn(q, k, v)`` apply the intended scale?

    Measures the scale with :func:`lib.infer_scale` (probes with known q, k, v) and compares it
    with ``expected(d_k)`` (default 1/√d_k; μP: ``lambda d: 1 / d``). The verdict names the
    mistake the probe recognises (scale after the softmax, scaled twice, from the wrong width, ...).
    Never raises on the learner's function; ``ValueError``/``TypeError`` for bad set-up arguments.
    """
    from ..experiments.scale_probe import infer_scale  # noqa: PLC0415 - lib.scale_probe imports lib.i18n only

    name = tr("Your attention function")
    if fn is None or fn is ...:
        return Verdict(False, tr("{name}: not defined yet; write it and run the cell again.",
                                 name=name), "missing")
    if not callable(fn):
        return Verdict(False, tr("{name}: expected a function f(q, k, v); got {kind}.", name=name,
                                 kind=type(fn).__name__), "unreadable")
    report = infer_scale(fn, expected=expected, backend=backend, batch_dims=batch_dims)
    return Verdict(report.ok, report.message, None if report.ok else report.verdict)


# --- casebook ------------------------------------------------------------------------------------

# The recipes of the casebook's transfer exercises, kept here so that no notebook cell shows them.
# "gpt-oss-sliding": a sliding layer of gpt-oss, scaled down (transformers models/gpt_oss at 00d4b3d:
# one learned sink per head, the default 1/sqrt(head_dim), a window on every other layer, grouped heads).
# "deepseek-v2": DeepSeek-V2's base scale, 1/sqrt(qk_nope_head_dim + qk_rope_head_dim) = 1/sqrt(192)
# (Megatron-LM issue 1501 quoting the Hugging Face code), YaRN's factor left out.
_CASE_SINKS = (0.5, -1.0, 2.0, 0.0)
_CASES = {
    "gpt-oss-sliding": dict(sinks=_CASE_SINKS, n_heads=4, q_per_kv=2, window=8),
    "deepseek-v2": dict(scale=192 ** -0.5, head_dim=192),
}
_FIELD_NAMES = {  # each a literal tr("...") call, so that the catalog tool extracts it
    "scale": lambda: tr("the scale (the factor on q·k)"), "qk_factor": lambda: tr("the factor on q and k"),
    "qk_norm": lambda: tr("the q/k norm"), "softcap": lambda: tr("the logit cap"),
    "alibi": lambda: tr("the ALiBi bias"), "sinks": lambda: tr("the sinks"),
    "causal": lambda: tr("the causal mask"), "window": lambda: tr("the sliding window"),
    "q_per_kv": lambda: tr("the grouping of the heads (q_per_kv)"),
    "n_heads": lambda: tr("the number of query heads"), "head_dim": lambda: tr("the head width"),
}


def check_case_recipe(answer, case: str) -> Verdict:
    """Transfer exercises of the `casebook` chapter: is ``answer`` (a ``lib.Recipe``) the recipe of ``case``?

    Compares the learner's recipe with the case's, field by field, and names every field that differs
    (not the value it should have): the scale by the factor on q·k at the case's head width, the rest
    by value. Never raises on the learner's answer; ``ValueError`` for an unknown case.
    """
    from ..experiments.port_check import Recipe  # noqa: PLC0415 - lib.port_check imports feedback.display

    if case not in _CASES:
        raise ValueError(f"case must be one of {sorted(_CASES)}; got {case!r}")
    name = tr("Your recipe")
    if answer is None or answer is ...:
        return Verdict(False, tr("{name}: not written yet; put a lib.Recipe(...) in my_recipe and run the cell "
                                 "again.", name=name), "missing")
    if isinstance(answer, dict):
        try:
            answer = Recipe.from_config(answer)
        except (TypeError, ValueError) as exc:
            return Verdict(False, tr("{name}: {err}", name=name, err=exc), "unreadable")
    if not isinstance(answer, Recipe):
        return Verdict(False, tr("{name}: expected a lib.Recipe; got {kind}.", name=name,
                                 kind=type(answer).__name__), "unreadable")
    want = Recipe(**_CASES[case])
    d = want.head_dim or 64
    off = []
    if not np.isclose(answer.logit_factor(d), want.logit_factor(d), rtol=1e-4, atol=0.0):
        off.append("scale")
    for field in ("qk_norm", "softcap", "alibi", "causal", "window", "q_per_kv", "head_dim"):
        if getattr(answer, field) != getattr(want, field):
            off.append(field)
    if want.n_heads is not None and answer.n_heads != want.n_heads:
        off.append("n_heads")
    a_s, w_s = answer.sinks, want.sinks
    if (a_s is None) != (w_s is None) or (w_s is not None and not np.allclose(
            np.broadcast_to(np.asarray(a_s, dtype=float), np.shape(w_s)), w_s, rtol=0, atol=1e-9)):
        off.append("sinks")
    if not off:
        return Verdict(True, tr("{name} is the checkpoint's: every factor is there, with its value.", name=name))
    fields = "; ".join(_FIELD_NAMES[f]() for f in off)
    return Verdict(False, tr("{name} differs from the checkpoint's in: {fields}. Read the excerpt again for "
                             "each of them.", name=name, fields=fields), "+".join(off))


def _recompute_inputs(scale_in, seed=0, L=64, d=128):
    """bfloat16 q and k of the FastVideo exercise (values as float32 tensors), and the exact base-2 LSE
    of the scaled scores (float64 from the rounded inputs, given to the learner as float32)."""
    import torch  # noqa: PLC0415 - the exercise runs with torch

    g = torch.Generator().manual_seed(seed)
    q, k = (scale_in * torch.randn(L, d, generator=g)).bfloat16(), (scale_in * torch.randn(L, d, generator=g)).bfloat16()
    s2 = (q.double() @ k.double().T) * d ** -0.5 / np.log(2)
    return q, k, torch.logsumexp(s2 * np.log(2), dim=-1) / np.log(2), s2


def check_recomputed_weights(fn, scales=(1.0, 4.0, 16.0)) -> Verdict:
    """Exercise `ex-casebook-kernel`: ``fn(q, k, lse2)`` recomputes a backward pass's weights
    ``P = 2^(q·k·(log2 e)/√d − lse2)`` from bfloat16 ``q``, ``k`` (L, d) and the forward's base-2
    log-sum-exp. Compared with the exact weights (float64) at input scales ``scales``; a row of weights
    must sum to 1 within 1 % and each weight match within 1 % of its row's largest. Never raises on the
    learner's function.
    """
    name = tr("Your recomputation")
    if fn is None or fn is ...:
        return Verdict(False, tr("{name}: not defined yet; write it and run the cell again.", name=name), "missing")
    if not callable(fn):
        return Verdict(False, tr("{name}: expected a function f(q, k, lse2); got {kind}.", name=name,
                                 kind=type(fn).__name__), "unreadable")
    worst = {}
    for sc in scales:
        q, k, lse2, s2 = _recompute_inputs(sc)
        try:
            p = np.asarray(as_array(fn(q, k, lse2.float())), dtype=float)
        except Exception as exc:  # noqa: BLE001 - the learner's function failing is a verdict
            return Verdict(False, tr("{name} failed ({kind}: {err}).", name=name, kind=type(exc).__name__, err=exc),
                           "error")
        exact = np.exp2(s2.numpy() - lse2.numpy()[:, None])
        if p.shape != exact.shape:
            return Verdict(False, tr("{name}: the weights have shape {got}; they should be {want}.", name=name,
                                     got=p.shape, want=exact.shape), "shape")
        err = np.abs(p - exact).max(axis=1) / exact.max(axis=1)
        worst[sc] = max(float(np.nanmax(np.abs(p.sum(axis=1) - 1))) if np.isfinite(p).all() else np.inf,
                        float(np.nanmax(err)) if np.isfinite(err).all() else np.inf)
    bad = [sc for sc, e in worst.items() if e > 0.01]
    if not bad:
        return Verdict(True, tr("{name} gives the forward's weights at every input scale (largest error {e:.1e}).",
                                name=name, e=max(worst.values())))
    grows = len(bad) < len(scales) and all(worst[a] <= worst[b] for a, b in zip(scales, scales[1:]))
    hint = tr(" The error grows with the size of the logits: something is rounded in proportion to the logit "
              "before the exponential.") if grows else ""
    return Verdict(False, tr("{name} is off by up to {e:.2g} at input scale {sc:g}.", name=name,
                             e=worst[bad[-1]], sc=bad[-1]) + hint, "grows_with_logit" if grows else None)


__all__ += ["check_case_recipe", "check_recomputed_weights"]


# Every public check tags its verdict with its name, for the opt-in record (lib.progress).
from . import progress as _progress  # noqa: E402

for _n in [n for n in __all__ if n.startswith("check_")]:
    globals()[_n] = _progress.recorded(globals()[_n])
del _n
