"""Where the torch path runs: CUDA when there is a GPU, the CPU otherwise."""
from __future__ import annotations

from ._backend import torch_module
from .i18n import tr

__all__ = ["default_device", "describe_device"]


def default_device():
    """``torch.device('cuda')`` when CUDA is available, else ``torch.device('cpu')``."""
    torch = torch_module()
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def describe_device(device=None) -> str:
    """A one-line description for chapters to print, e.g. ``'cpu (torch 2.13.0, 2 threads)'``."""
    torch = torch_module()
    device = default_device() if device is None else torch.device(device)
    if device.type == "cuda":
        return tr("cuda: {name} (torch {version})", name=torch.cuda.get_device_name(device),
                  version=torch.__version__)
    return tr("cpu (torch {version}, {threads} threads; no GPU found, so the CPU ran this)",
              version=torch.__version__, threads=torch.get_num_threads())
