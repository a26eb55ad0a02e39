"""lib.progress_bars: a tqdm bar under each cell that trains, only where a notebook turned it on."""
import pytest

import lib
from lib.infra import bars


@pytest.fixture(autouse=True)
def _bars_off():
    yield
    lib.progress_bars(False)
    lib.set_language(None)


def test_off_by_default_and_then_nothing_is_drawn(capsys):
    assert not bars.bars_on()
    b = bars.bar(5, "x")
    assert not hasattr(b, "n")          # the stand-in, not a tqdm bar
    b.update(1)
    b.close()
    assert capsys.readouterr().err == ""


def test_on_gives_tqdm_s_own_bar():
    tqdm = pytest.importorskip("tqdm").tqdm
    lib.progress_bars(True)
    b = bars.bar(4, "steps")
    try:
        assert isinstance(b, tqdm) and b.total == 4 and b.desc.startswith("steps") and not b.leave
        b.update(3)
        assert b.n == 3
    finally:
        b.close()


@pytest.mark.parametrize("bad", [1, "yes", None])
def test_progress_bars_names_a_bad_argument(bad):
    with pytest.raises(TypeError, match="on must be True or False"):
        lib.progress_bars(bad)


@pytest.mark.parametrize("total", [0, -1, 2.0, True])
def test_bar_names_a_bad_total(total):
    with pytest.raises(ValueError, match="total must be a positive int"):
        bars.bar(total, "x")


def test_training_draws_a_bar_in_the_notebook_s_language(capsys):
    pytest.importorskip("tqdm")
    training = pytest.importorskip("lib.experiments.training")
    lib.set_language("ja")
    lib.progress_bars(True)
    training.train_grid(8, [0], [training.Arm(0.01)], steps=3, batch_size=4, optimizer="adam")
    err = capsys.readouterr().err            # tqdm's text bar (no notebook here): label and step count
    assert lib.tr("training steps") != "training steps" and lib.tr("training steps") in err
    assert "/3 " in err                      # a bar over the three steps


def test_training_draws_nothing_when_the_bars_are_off(capsys):
    training = pytest.importorskip("lib.experiments.training")
    training.train_grid(8, [0], [training.Arm(0.01)], steps=3, batch_size=4, optimizer="adam")
    assert capsys.readouterr().err == ""
