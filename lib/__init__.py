"""lib: the one tested implementation of attention that every chapter imports.

NumPy path: works without torch.  Torch path: pass torch tensors (CPU or CUDA).

Layout (one module per idea; each lists its public names in ``__all__``; the chapters that use a
module are named by their labels, e.g. ``variance`` for ``book/variance.md``):

- ``attention``  softmax, its Jacobian, scaled dot-product attention as the formula reads, heads, masks
                 (formula, practice, caveats)
- ``fast``       ``attention_fast``: the same attention with the speed-ups of ``speed`` (``make bench``)
- ``checks``     argument checks shared by the modules (one meaning of ``scale=``)
- ``claims``     ``claims.check`` / ``claims.holds``: how a page checks its prose (strict in the build,
                 recorded by ``make test-robust``, silent in a learner's notebook); ``claims.seed``
- ``metrics``    entropy, Jacobian norm, random-attention statistics (softmax-saturation,
                 training, caveats)
- ``simulate``   Monte Carlo of dot products and exam scores (test-scores, variance, training)
- ``saturation`` softmax saturation helpers (softmax-saturation)
- ``modern``     what current models do instead of a fixed 1/√d_k (caveats)
- ``blockwise``  memory-efficient attention with the online softmax, and its exp2 form (speed, real-code)
- ``port_check`` ``Recipe``, ``reference_attention``, ``check_port``: a port against its checkpoint's recipe
                 (porting)
- ``scale_probe`` ``infer_scale``: measure the scale an attention function applies (real-code; on port_check's runner)
- ``timing``     interleaved timing and peak memory, for ``speed`` and ``benchmarks/`` (import it)
- ``selfcheck``  verdicts for exercise answers (every chapter); ``read_answer``, the one answer reader
- ``display``    ``Shown``: how a verdict or a report shows (✓/✗, label, message; text, Markdown, HTML);
                 ``table``: a chapter's small table of numbers (aligned text, an HTML table in a notebook)
- ``progress``   an opt-in local record of shown verdicts (the trainer's report of them: tools/cohort.py)
- ``exercises``  one self-check per exercise whose answer must not appear in the notebook
- ``i18n``       ``tr``: figure labels and verdicts in the book's language, from the page catalogs
- ``plotting``   the book's figure style (import it explicitly: ``from lib import plotting``)
- ``mha``, ``device``, ``training``, ``block``: need torch; loaded on first use (``block``: a small
                 standard two-layer model on ``training``'s task, multi-head).

Modules imported here must not import torch or matplotlib at module level, so
that ``import lib`` works where torch is not installed (tests/test_no_torch.py).
"""
from __future__ import annotations

import importlib

from . import attention, blockwise, exercises, i18n, metrics, modern, saturation, selfcheck, simulate
from . import checks, claims, display, fast, port_check, progress, scale_probe, timing
from .attention import *  # noqa: F401,F403
from .blockwise import *  # noqa: F401,F403
from .display import table  # noqa: F401
from .exercises import *  # noqa: F401,F403
from .fast import *  # noqa: F401,F403
from .i18n import language, set_language, tr, wrap  # noqa: F401
from .metrics import *  # noqa: F401,F403
from .modern import *  # noqa: F401,F403
from .progress import *  # noqa: F401,F403
from .saturation import *  # noqa: F401,F403
from .port_check import *  # noqa: F401,F403
from .scale_probe import *  # noqa: F401,F403
from .selfcheck import *  # noqa: F401,F403
from .simulate import *  # noqa: F401,F403

__version__ = "0.1.0"

# Names that need torch are loaded on first access (PEP 562), so `import lib`
# never imports torch.
_LAZY = {
    "MultiHeadAttention": ("mha", "MultiHeadAttention"),
    "default_device": ("device", "default_device"),
    "describe_device": ("device", "describe_device"),
}

__all__ = [
    *attention.__all__,
    *blockwise.__all__,
    "table",
    *exercises.__all__,
    *fast.__all__,
    "language", "set_language", "tr",
    *metrics.__all__,
    *modern.__all__,
    *progress.__all__,
    *saturation.__all__,
    *port_check.__all__,
    *scale_probe.__all__,
    *selfcheck.__all__,
    *simulate.__all__,
    *_LAZY,
    # the modules a chapter uses by name (lib.claims.check, lib.i18n.wrap, ...)
    "checks", "claims", "display", "i18n", "timing",
]


def __getattr__(name):
    if name in _LAZY:
        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(f".{module}", __name__), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'lib' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
