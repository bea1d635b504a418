"""Notebook 04's closing table (tutorial_lib.studies.comparing_links): the heads as each study sees them."""
import pytest
import torch

from tutorial_lib.methods.attribution import eap_scores
from tutorial_lib.methods.selectivity import induction_circuit, selectivity
from tutorial_lib.studies import comparing as cm
from tutorial_lib.studies import comparing_links as cl
from tutorial_lib.studies.spectral_loaded import model_probe
from tutorial_lib.tasks.greater_than import make_greater_than
from tutorial_lib.zoo.loading import load_model

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def run():
    model = load_model("zoo-multitask", verbose=False)
    task = make_greater_than(model.tokenizer, n=12, seed=0)
    eap = eap_scores(model, task, metric="metric", progress=False)
    c = cm.compare_methods(model, task, ig_steps=2, fractions=(0.0, 0.05, 1.0), random_seeds=[0], progress=False,
                           scores={"EAP": eap})
    return model, task, c, eap, cl.study_links(model, task, c, eap, probe_n=32)


def test_attention_to_yy_against_a_plain_loop(run):
    model, task, *_ = run
    att = cl.attention_to(model, task, "YY", batch_size=5)
    _, cache = model.run_with_cache(task.clean[:3])
    l, h = model.cfg.n_layers - 1, 0
    slow = sum(float(cache[f"blocks.{l}.attn.hook_pattern"][i, h, task.end_pos[i], task.positions["YY"][i]])
               for i in range(3)) / 3
    _, cache_all = model.run_with_cache(task.clean)
    full = cache_all[f"blocks.{l}.attn.hook_pattern"]
    every = sum(float(full[i, h, task.end_pos[i], task.positions["YY"][i]]) for i in range(len(task))) / len(task)
    assert float(att[l, h]) == pytest.approx(every, abs=1e-5) and 0 <= slow <= 1


def test_table_columns_come_from_each_study(run):
    model, task, c, eap, links = run
    t = links.table
    k = len(c.pp_nodes)
    for name in c.pp_nodes:
        assert t.loc[name, "01: in path-patching circuit"]
    # reuse by hand: the share of examples whose own top-k holds the component
    name = c.pp_nodes[0]
    i = c.components.index(name)
    share = sum(i in eap.signed_nodes[e].abs().argsort(descending=True)[:k].tolist() for e in range(len(task))) / len(task)
    assert t.loc[name, f"02: EAP reuse (top-{k} per example)"] == pytest.approx(share, abs=1e-3)
    sel = selectivity(model, model_probe(model, n=32))
    assert set(links.filter_heads) == set(induction_circuit(sel, threshold=cl.INDUCTION_THRESHOLD))
    head = next(n for n in t.index if n.startswith("a"))
    l, h = (int(x[1:]) for x in head.split("."))
    assert t.loc[head, "03: induction ×"] == pytest.approx(float(sel["induction"][l, h]), rel=1e-3)
    exact = c.node_scores["exact node patching"][1:].abs()
    assert t.loc[name, "04: rank by exact effect"] == 1 + int((exact > exact[i]).sum())


def test_reading_quotes_the_table(run):
    *_, links = run
    text = links.reading()
    assert len(text.split()) <= 120
    both = set(links.pp_heads) & set(links.filter_heads)
    assert text.startswith(f"{len(both)} of the path-patching circuit's {len(links.pp_heads)} heads")
