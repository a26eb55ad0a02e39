"""`import lib` and the whole NumPy path work where torch is not installed."""
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent(
    """
    import importlib.abc, sys
    class NoTorch(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "torch" or name.startswith("torch."):
                raise ModuleNotFoundError("No module named 'torch' (blocked by the test)", name=name)
    sys.meta_path.insert(0, NoTorch())
    import numpy as np
    import lib
    assert "torch" not in sys.modules
    q = np.eye(3)[:2]
    out, w = lib.scaled_dot_product_attention(q, np.eye(3), np.arange(6.0).reshape(3, 2), return_weights=True)
    assert out.shape == (2, 2) and np.allclose(w.sum(-1), 1)
    lib.softmax_jacobian(lib.softmax([1.0, 2.0]))
    lib.merge_heads(lib.split_heads(np.zeros((2, 4, 6)), 3))
    lib.sample_dot_products(4, 10)
    try:
        lib.default_device()
    except ModuleNotFoundError as e:
        assert "pip install torch==2.13.0" in str(e), e
    else:
        raise AssertionError("default_device() should say that torch is missing")
    assert "torch" not in sys.modules
    print("ok")
    """
)


def test_import_and_numpy_path_without_torch():
    r = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
