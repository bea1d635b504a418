"""Shared test set-up: the one tiny-model factory, the toy data, and the fixtures built from them.

* :func:`make_tiny_model` builds every random model the tests use, offline on the CPU, from a named
  preset (:data:`PRESETS`) plus any ``HookedTransformerConfig`` field as an override::

      make_tiny_model()                                  # 2 layers, 4 heads, MLPs, 50 tokens
      make_tiny_model("toy", d_vocab=53, seed=3)         # the patching tests' model (weights x2: effects O(1))
      make_tiny_model("planted", seed=1)                 # the spectral tests' attention-only model
      make_tiny_model("eap", parallel_attn_mlp=True)     # the EAP tests' float64 model, one field changed

  Test modules import it (``from conftest import make_tiny_model``) when they need models of their own.
* Fixtures: ``tiny_model`` / ``tiny_attn_only`` (the default preset), ``toy_model`` / ``toy_task``
  (activation patching, circuit evaluation), ``path_model`` / ``path_data`` (path patching and
  discovery), ``probe`` (a planted-pair probe for the spectral recipe), ``gpt2`` / ``zoo`` (the two
  tokenizers, offline).

Reference implementations the fast code is checked against live in their own modules
(``path_reference.py``); nothing there builds a model.
"""
import os
import warnings

warnings.filterwarnings("ignore", category=DeprecationWarning)

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(int(os.environ.get("TEST_THREADS", "1")))

BASE = dict(n_layers=2, d_model=32, n_heads=4, d_mlp=64, d_vocab=50, n_ctx=32, act_fn="gelu",
            normalization_type="LN", attn_only=False, device="cpu")
PLANTED_V, PLANTED_T = 50, 20  # the planted-pair probe's vocabulary and sequence length
PRESETS = {
    "small": {},
    # the patching / path-patching / circuit-evaluation model: 3 layers, weights x2 so effects are O(1)
    "toy": dict(n_layers=3, d_model=48, n_heads=4, d_head=12, d_mlp=96, n_ctx=16, act_fn="gelu_new", scale=2.0),
    # the EAP tests' model: 3 layers in float64, so EAP and its slow reference agree to ~1e-12
    "eap": dict(n_layers=3, d_head=8, d_mlp=64, d_vocab=40, n_ctx=16, dtype=torch.float64),
    # the spectral recipe's model: attention-only, over the planted-pair probe's tokens and positions
    "planted": dict(n_layers=2, d_model=32, n_heads=4, d_head=8, n_ctx=PLANTED_T, d_vocab=PLANTED_V, attn_only=True),
}


def make_tiny_model(preset: str = "small", *, seed=0, scale=None, train: bool = False, tokenizer=None, **cfg):
    """A random ``HookedTransformer`` from ``PRESETS[preset]`` with ``cfg`` overriding any config field.

    ``d_head`` defaults to ``d_model // n_heads``; an attention-only model gets no ``d_mlp`` unless one
    is given. ``scale`` multiplies every weight (larger effects than the default init), ``train=True``
    leaves the model in training mode (default: ``eval()``), ``tokenizer`` is handed to the model.
    """
    from transformer_lens import HookedTransformer, HookedTransformerConfig

    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; accepted: {sorted(PRESETS)}")
    given = {**PRESETS[preset], **cfg}
    settings = {**BASE, **given, "seed": seed}
    preset_scale = settings.pop("scale", None)
    scale = preset_scale if scale is None else scale
    settings.setdefault("d_head", settings["d_model"] // settings["n_heads"])
    if settings["attn_only"] and "d_mlp" not in given:
        settings["d_mlp"] = None
    model = HookedTransformer(HookedTransformerConfig(**settings), tokenizer=tokenizer)
    if scale is not None:
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(scale)
    return model if train else model.eval()


# ------------------------------------------------------------------ toy data
def toy_tokens(batch, pos, vocab, corrupt_at, seed):
    """Random clean tokens ``[batch, pos]`` and a copy with new random tokens at the positions ``corrupt_at``."""
    g = torch.Generator().manual_seed(seed)
    clean = torch.randint(0, vocab, (batch, pos), generator=g)
    corrupt = clean.clone()
    for p in corrupt_at:
        corrupt[:, p] = torch.randint(0, vocab, (batch,), generator=g)
    return clean, corrupt


def planted_pair_tokens(n, seq_len=PLANTED_T, vocab=PLANTED_V, seed=0):
    """Random tokens; A at a random early position (and nowhere else but the end), B after it, A again last."""
    g = torch.Generator().manual_seed(seed)
    toks = torch.randint(0, vocab, (n, seq_len), generator=g)
    a_pos = torch.randint(1, seq_len - 7, (n,), generator=g)
    A = torch.randint(0, vocab, (n,), generator=g)
    for i in range(n):
        row = toks[i]
        row[row == A[i]] = (A[i] + 1) % vocab
        row[a_pos[i]] = A[i]
        row[-1] = A[i]
    return toks, a_pos


TOY_LAYERS, TOY_HEADS = PRESETS["toy"]["n_layers"], PRESETS["toy"]["n_heads"]
TOY_BATCH, TOY_POS, TOY_VOCAB = 5, 8, 53  # the toy task: examples, positions, vocabulary

COMPARISON_FRACTIONS = (0.0, 0.01, 0.05, 0.1, 0.3, 1.0)  # the curves' sizes in zoo_comparison


@pytest.fixture(scope="session")
def zoo_comparison():
    """Notebook 04's whole comparison on the shipped small zoo model (16 greater-than prompts, 3 IG steps, the sizes
    of :data:`COMPARISON_FRACTIONS`, 2 random seeds): ``(model, task, MethodComparison)``, shared by the modules that
    test the study, its readings and its predictions (none of them changes it)."""
    from tutorial_lib.studies.comparing import compare_methods
    from tutorial_lib.tasks.greater_than import make_greater_than
    from tutorial_lib.zoo.loading import load_model

    model = load_model("zoo-multitask", verbose=False)
    task = make_greater_than(model.tokenizer, n=16, seed=0)
    return model, task, compare_methods(model, task, ig_steps=3, fractions=COMPARISON_FRACTIONS,
                                        random_seeds=range(2), progress=False)
PATH_BATCH, PATH_POS, PATH_VOCAB = 6, 9, 61  # the path-patching data


# ------------------------------------------------------------------ fixtures
@pytest.fixture
def tiny_model():
    return make_tiny_model()


@pytest.fixture
def tiny_attn_only():
    return make_tiny_model(attn_only=True)


@pytest.fixture(scope="module")
def toy_model():
    """The activation-patching and circuit-evaluation tests' model."""
    return make_tiny_model("toy", d_vocab=TOY_VOCAB, seed=3)


@pytest.fixture(scope="module")
def toy_task():
    """One corrupted position (2, also named YY); END differs per example; answer 3 against 9."""
    from tutorial_lib.tasks.base import TaskData

    B = TOY_BATCH
    clean, corrupt = toy_tokens(B, TOY_POS, TOY_VOCAB, [2], seed=1)
    end = torch.tensor([7, 6, 7, 7, 5])
    return TaskData("toy", [""] * B, [""] * B, clean, corrupt, end, torch.full((B,), 3),
                    torch.full((B, 1), 9), positions={"YY": torch.full((B,), 2)})


@pytest.fixture(scope="module")
def path_model():
    """The path-patching and discovery tests' model."""
    return make_tiny_model("toy", d_vocab=PATH_VOCAB)


@pytest.fixture(scope="module")
def path_data():
    """``(clean, corrupt, end, yy)``: two corrupted positions (2 and YY = 5); END differs per example."""
    clean, corrupt = toy_tokens(PATH_BATCH, PATH_POS, PATH_VOCAB, [2, 5], seed=0)
    end = torch.tensor([8, 8, 7, 8, 6, 8])  # "END" differs per example, as with right padding
    yy = torch.full((PATH_BATCH,), 5)
    return clean, corrupt, end, yy


@pytest.fixture(scope="module")
def gpt2():
    """GPT-2's tokenizer, offline (``data/gpt2/``)."""
    from tutorial_lib.tasks.tokenizers import gpt2_tokenizer

    return gpt2_tokenizer()


@pytest.fixture(scope="module")
def zoo():
    """The zoo's word-level tokenizer (``data/zoo/tokenizer/``)."""
    from tutorial_lib.tasks.tokenizers import zoo_tokenizer

    return zoo_tokenizer()


@pytest.fixture
def probe():
    """A planted-pair probe of 24 sequences (the spectral recipe's tests)."""
    from tutorial_lib.methods.selectivity import PlantedPairProbe

    return PlantedPairProbe(*planted_pair_tokens(24))


# ------------------------------------------------------------------ ordering
def pytest_configure(config):
    config.addinivalue_line("markers", "after_notebooks: run after every other item of the session (it reads what "
                                       "the notebook run recorded)")


def pytest_collection_modifyitems(config, items):
    """Items marked ``after_notebooks`` (the README-figures check) run last, after the nbval notebook items."""
    late = [item for item in items if item.get_closest_marker("after_notebooks")]
    if late:
        items[:] = [item for item in items if not item.get_closest_marker("after_notebooks")] + late
    _log_notebook_readings(items)
    _time_notebooks(items)


# ------------------------------------------------------------------ readings of the notebook runs
READINGS_DIR_ENV = "TUTORIAL_READINGS"  # set by the README's test command: where each notebook run logs its readings


def readings_file(run: str, stem: str):
    """Where the ``run`` ("zoo": the nbval run on the offline default; "gpt2": the GPT-2-shaped run) of notebook
    ``stem`` logs its readings (``tutorial_lib.course.reading``), or ``None`` when the test command did not ask."""
    from pathlib import Path

    folder = os.environ.get(READINGS_DIR_ENV)
    return Path(folder) / run / f"{stem}.jsonl" if folder else None


def _log_notebook_readings(items):
    """Each nbval notebook's kernel starts with ``TUTORIAL_READINGS_FILE`` naming its own file (the kernel inherits
    the environment when its notebook's first cell is set up; the variable is removed right after)."""
    from tutorial_lib.course.reading import READINGS_ENV

    if not os.environ.get(READINGS_DIR_ENV):
        return
    for node in {item.parent for item in items if str(item.path).endswith(".ipynb") and item.parent is not None}:
        target = readings_file("zoo", node.path.stem)
        if target.exists():
            target.unlink()  # a previous session's log is not this run's

        def setup(original=node.setup, target=target):
            os.environ[READINGS_ENV] = str(target)
            try:
                original()
            finally:
                os.environ.pop(READINGS_ENV, None)

        node.setup = setup


# ------------------------------------------------------------------ the notebooks' wall times
def _time_notebooks(items):
    """With ``TUTORIAL_RECORD`` set (the README's test command), each nbval notebook's wall time, from its kernel's
    start to its end, goes to ``times.json`` there: the README's course table is written from it
    (``scripts/readme_figures.py``) and ``tests/test_readme_figures.py`` compares the table with it."""
    import time

    from tutorial_lib.course.record import RECORD_ENV, record_time
    from tutorial_lib.zoo.loading import default_zoo_model

    if not os.environ.get(RECORD_ENV) or os.environ.get("TUTORIAL_MODEL", "auto") != "auto":
        return
    from tutorial_lib.course.record import record_slow_cells

    cells = [item for item in items if str(item.path).endswith(".ipynb") and item.parent is not None]
    for node in {item.parent for item in cells}:
        started, slow = {}, []

        def setup(original=node.setup, started=started, slow=slow):
            started["t"] = time.perf_counter()
            slow.clear()
            original()

        def teardown(original=node.teardown, started=started, slow=slow, stem=node.path.stem):
            try:
                original()
            finally:
                if "t" in started:
                    record_time(stem[:2], time.perf_counter() - started["t"], "zoo", default_zoo_model())
                    record_slow_cells(stem[:2], slow)

        node.setup, node.teardown, node._course_slow = setup, teardown, slow
    for item in cells:  # each cell's own time, filed under its section (the README lists those over 20 s)
        def runtest(original=item.runtest, item=item):
            t = time.perf_counter()
            try:
                original()
            finally:
                item.parent._course_slow.append((_section_of(item), time.perf_counter() - t))

        item.runtest = runtest


def _section_of(item) -> str:
    """The number of the ``## N. ...`` section a notebook cell sits in (its title when unnumbered; "top" before any)."""
    import re

    nb = getattr(item.parent, "nb", None)
    here = next((i for i, c in enumerate(nb.cells) if c is item.cell), None) if nb is not None else None
    for cell in reversed(nb.cells[:here] if here is not None else []):
        if cell.cell_type == "markdown":
            head = next((l[3:].strip() for l in cell.source.splitlines() if l.startswith("## ")), None)
            if head:
                m = re.match(r"(\d+(?:\.\d+)*)\.?\s", head)
                return m.group(1) if m else head.split(" (")[0]
    return "top"
