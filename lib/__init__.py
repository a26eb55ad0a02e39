"""lib: the one tested implementation of attention that every chapter imports.

NumPy path: works without torch.  Torch path: pass torch tensors (CPU or CUDA).

Four layers, one folder each (one module per idea; each lists its public names in ``__all__``; the
chapters that use a module are named by their labels, e.g. ``variance`` for ``book/variance.md``).
``infra`` imports no other layer, ``formula`` only ``infra``; ``experiments`` and ``feedback`` use both
(and each other only where named below; tests/test_layout.py checks it):

``infra/``: what the rest stands on
    ``checks``      argument checks shared by the modules (one meaning of ``scale=``)
    ``claims``      ``claims.claim`` / ``check`` / ``holds``: how a page checks its prose (strict in the build,
                    recorded by ``make test-robust``, silent in a learner's notebook); ``claims.seed``
    ``i18n``        ``tr``: figure labels and verdicts in the book's language, from the page catalogs
    ``plotting``    the book's figure style (matplotlib; ``from lib import plotting``)
    ``timing``      interleaved timing and peak memory, for ``speed`` and ``benchmarks/``
    ``device``      ``default_device``, ``describe_device`` (torch)
``formula/``: attention itself
    ``attention``   softmax, its Jacobian, scaled dot-product attention as the formula reads, heads, masks
                    (formula, practice, caveats)
    ``fast``        ``attention_fast``: the same attention with the speed-ups of ``speed`` (``make bench``)
    ``blockwise``   memory-efficient attention with the online softmax, and its exp2 form (speed, real-code)
    ``modern``      what current models do instead of a fixed 1/√d_k (caveats)
    ``saturation``  softmax saturation helpers (softmax-saturation)
    ``metrics``     entropy, Jacobian norm, random-attention statistics (softmax-saturation, training, caveats)
    ``simulate``    Monte Carlo of dot products and exam scores (test-scores, variance, training)
    ``mha``         ``MultiHeadAttention``, a ``torch.nn.Module`` on ``attention`` (multi-head; torch)
``experiments/``: what the book measures
    ``task``        the retrieval task the models learn, its batches and its exact baselines (torch)
    ``trainer``     ``fit``: one trainer for a grid of (arm, seed) ``nn.Module``s with ``torch.func``
    ``training``    the one-layer toy model ``AttentionRetriever``, ``train_grid``, what is measured on it
                    (training, tuning; torch)
    ``block``       ``RetrievalTransformer``: a small standard pre-LN Transformer on the same task (block)
    ``port_check``  ``Recipe``, ``reference_attention``, ``check_port``: a port against its checkpoint's recipe
                    (porting; shows its report with ``feedback.display``)
    ``scale_probe`` ``infer_scale``: measure the scale an attention function applies (real-code)
``feedback/``: what a learner sees when they answer
    ``selfcheck``   verdicts for exercise answers (every chapter); ``read_answer``, the one answer reader
    ``exercises``   one self-check per exercise whose answer must not appear in the notebook (one of them
                    uses ``experiments.scale_probe``)
    ``display``     ``Shown``: how a verdict or a report shows (✓/✗, label, message; text, Markdown, HTML);
                    ``table``: a chapter's small table of numbers
    ``progress``    an opt-in local record of shown verdicts (the trainer's report of them: tools/cohort.py)

Every public name listed here is importable from ``lib`` (``lib.scaled_dot_product_attention``), and
every module by its own name (``lib.claims``, ``from lib import training``).  Modules imported here
must not import torch or matplotlib at module level, so that ``import lib`` works where torch is not
installed (tests/test_no_torch.py); the others load on first use.
"""
from __future__ import annotations

import importlib

from .infra import bars, checks, claims, i18n, timing
from .formula import attention, blockwise, fast, metrics, modern, saturation, simulate
from .experiments import port_check, scale_probe
from .feedback import display, exercises, progress, selfcheck
from .formula.attention import (softmax, softmax_jacobian, scaled_dot_product_attention, split_heads,
    merge_heads, causal_mask)
from .formula.blockwise import (blockwise_attention, softmax_exp2)
from .formula.fast import (attention_fast)
from .formula.metrics import (attention_entropy, jacobian_norm, random_attention_stats)
from .formula.modern import (l2_normalize, qk_norm_scores, qk_layer_norm_scores, mup_scale,
    length_scaled_softmax, sigma_reparam, correlated_projections)
from .formula.saturation import (jacobian_gap_bound, logit_scale_sweep, one_query_attention)
from .formula.simulate import (sample_dot_products, exam_totals, variance_standard_error, repeated_variances,
    excess_kurtosis)
from .experiments.port_check import (Recipe, PortReport, reference_attention, alibi_slopes, check_port,
    check_logit_factor)
from .experiments.scale_probe import (ScaleReport, infer_scale)
from .feedback.exercises import (check_attention_output, check_rescaled_totals, check_scaled_variance,
    check_scores_shape, check_naive_softmax, check_float16_dk, check_doubled_scores, check_sd_growth,
    check_weight_over_dk, check_temperature_jacobian, check_steps_to_threshold, check_best_against_best,
    check_correlated_score_moments, check_mha_params, check_logsumexp, check_attention_function, check_case_recipe, check_recomputed_weights)
from .feedback.progress import (record_progress, stop_recording, progress_file)
from .feedback.selfcheck import (Verdict, check_array, check_number, check_dot, check_scaled_scores,
    check_softmax, check_attention_weights)
from .feedback.display import table
from .infra.i18n import language, set_language, set_page, tr, wrap
from .infra.bars import progress_bars

__version__ = "0.1.0"

# Modules and names that need torch (or matplotlib) load on first access (PEP 562), so `import lib`
# imports neither.
_LAZY_MODULES = {"mha": "formula", "device": "infra", "plotting": "infra", "task": "experiments",
                 "trainer": "experiments", "training": "experiments", "block": "experiments",
                 "explore": "experiments", "explorable": "infra"}
_LAZY = {
    "MultiHeadAttention": ("formula.mha", "MultiHeadAttention"),
    "default_device": ("infra.device", "default_device"),
    "describe_device": ("infra.device", "describe_device"),
}

__all__ = [
    'softmax', 'softmax_jacobian', 'scaled_dot_product_attention', 'split_heads', 'merge_heads',
    'causal_mask', 'blockwise_attention', 'softmax_exp2', 'attention_fast', 'attention_entropy',
    'jacobian_norm', 'random_attention_stats', 'l2_normalize', 'qk_norm_scores', 'qk_layer_norm_scores',
    'mup_scale', 'length_scaled_softmax', 'sigma_reparam', 'correlated_projections', 'jacobian_gap_bound',
    'logit_scale_sweep', 'one_query_attention', 'sample_dot_products', 'exam_totals',
    'variance_standard_error', 'repeated_variances', 'excess_kurtosis', 'Recipe', 'PortReport',
    'reference_attention', 'alibi_slopes', 'check_port', 'check_logit_factor', 'ScaleReport', 'infer_scale',
    'check_attention_output', 'check_rescaled_totals', 'check_scaled_variance', 'check_scores_shape',
    'check_naive_softmax', 'check_float16_dk', 'check_doubled_scores', 'check_sd_growth',
    'check_weight_over_dk', 'check_temperature_jacobian', 'check_steps_to_threshold',
    'check_best_against_best', 'check_correlated_score_moments', 'check_mha_params', 'check_logsumexp',
    'check_attention_function', 'check_case_recipe', 'check_recomputed_weights', 'record_progress', 'stop_recording', 'progress_file', 'Verdict',
    'check_array', 'check_number', 'check_dot', 'check_scaled_scores', 'check_softmax',
    'check_attention_weights',
    "table", "language", "set_language", "set_page", "tr", "wrap", "progress_bars",
    *_LAZY,
    # the modules, by name (lib.claims.check, lib.i18n.wrap, from lib import training, ...)
    "bars", "checks", "claims", "i18n", "timing", "attention", "blockwise", "fast", "metrics", "modern", "saturation",
    "simulate", "port_check", "scale_probe", "display", "exercises", "progress", "selfcheck", *_LAZY_MODULES,
]


def __getattr__(name):
    if name in _LAZY_MODULES:
        value = importlib.import_module(f".{_LAZY_MODULES[name]}.{name}", __name__)
    elif name in _LAZY:
        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(f".{module}", __name__), attr)
    else:
        raise AttributeError(f"module 'lib' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_LAZY_MODULES))
