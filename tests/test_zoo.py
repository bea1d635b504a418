"""The shipped zoo: manifest metrics re-measured, hashes checked, the multi-task corpus held out."""
import pytest
import torch

from tutorial_lib.zoo import store
from tutorial_lib.zoo.evaluate import TARGETS, evaluate_multitask, evaluation_options

MULTI = "zoo-multitask"
MEDIUM = "zoo-multitask-medium"
needs_multi = pytest.mark.skipif(MULTI not in store.zoo_names(), reason="zoo-multitask not built")
MULTITASK_MODELS = [m for m in (MULTI, MEDIUM) if m in store.zoo_names()]


def test_every_shipped_model_matches_its_hash():
    names = store.zoo_names()
    assert names, "data/zoo ships no model"
    manifest = store.read_manifest()["models"]
    for name in names:
        path = store.manifest_path().parent / manifest[name]["file"]
        assert store.sha256_file(path) == manifest[name]["sha256"], name


@pytest.mark.parametrize("name", MULTITASK_MODELS)
def test_manifest_describes_the_model_as_the_build_does(name):
    """The banner a learner sees is the manifest's description: the build's own, and for the medium model it says its
    copying was trained on half of its tokens and holds on the other half (issue 30; tests/test_copying.py measures
    it), not that it copies filler words only, as the model it replaced did."""
    from tutorial_lib.zoo.build import VARIANTS

    text = store.read_manifest()["models"][name]["description"]
    assert text == VARIANTS[name]["description"]
    if name == MEDIUM:
        assert "seeded half" in text and "copies the other half" in text and "filler" not in text
        assert store.read_manifest()["models"][name]["metrics_note"] == VARIANTS[name]["metrics_note"]


@pytest.mark.parametrize("name", MULTITASK_MODELS)
def test_manifest_metrics_are_reproduced(name):
    model = store.load_model_from_zoo(name)
    entry = store.read_manifest()["models"][name]
    again = evaluate_multitask(model, **evaluation_options(entry.get("mix", {})))
    for key, value in entry["metrics"].items():
        if isinstance(value, float):
            assert again[key] == pytest.approx(value, abs=2e-3), key
        else:
            assert again[key] == value, key


@pytest.mark.parametrize("name", MULTITASK_MODELS)
def test_multitask_model_reaches_targets_or_says_so(name):
    from tutorial_lib.zoo.evaluate import MEDIUM_TARGETS, missed_targets

    entry = store.read_manifest()["models"][name]
    if name == MEDIUM:
        missed = set(missed_targets(entry["metrics"], MEDIUM_TARGETS, induction_minority=True))
    else:
        missed = {k for k, t in TARGETS.items() if entry["metrics"].get(k, -1) < t}
    assert missed == set(entry.get("targets_missed", {}))


@pytest.mark.skipif(MEDIUM not in store.zoo_names(), reason="zoo-multitask-medium not built")
@pytest.mark.parametrize("tokens", ["trained", "held out"])
def test_medium_model_in_context_copying_by_attention_and_ablation(tokens):
    """The induction targets checked by attention (heads putting >= 0.3 on the induction target) and, where such
    heads exist, by ablation: zeroing them costs more of the copy gain than zeroing as many random heads of the
    same layers (three draws). On induction rows of the tokens its training repeated (the manifest's heads), and on
    the same rows built from the held-out tokens it never saw repeated (issue 30): a minority of heads there too."""
    from tutorial_lib.core.circuits import ablation_hooks
    from tutorial_lib.tasks.induction import induction_attention, induction_metrics, make_induction
    from tutorial_lib.zoo.evaluate import INDUCTION_HEAD_ATTENTION, first_copy_loss
    from tutorial_lib.core.minority import is_minority
    from tutorial_lib.zoo.copying import copy_token_sets
    from tutorial_lib.zoo.multitask import induction_ids

    model = store.load_model_from_zoo(MEDIUM)
    entry = store.read_manifest()["models"][MEDIUM]
    mix = entry["mix"]
    lo, hi = mix["induction_len"]
    allowed = (induction_ids(model.tokenizer, mix["induction_vocab"]) if tokens == "trained"
               else copy_token_sets(model).held_out)
    data = make_induction(model.tokenizer, 200, seq_len=mix["induction_seq_len"], seed=7, split="test", min_len=lo,
                          max_len=hi, n_segments=mix["induction_segments"], allowed=allowed)
    att = induction_attention(model, data).flatten()
    H = model.cfg.n_heads
    heads = [f"a{i // H}.h{i % H}" for i in range(len(att)) if att[i] >= INDUCTION_HEAD_ATTENTION]
    if tokens == "trained":
        assert sorted(heads) == sorted(entry["metrics"]["induction_heads"])  # the manifest's list, on other sequences
    else:
        assert is_minority(len(heads), len(att)), heads
    if not heads:
        assert "induction_heads" in entry["targets_missed"]  # the miss is recorded, not hidden
        pytest.skip("no induction head formed in the shipped medium model (recorded in its manifest)")

    def gain(hooks):
        """Loss on the first copy minus loss on the second, with ``hooks`` active for both."""
        with model.hooks(fwd_hooks=hooks):
            first = first_copy_loss(model, data)
        return first - induction_metrics(model, data, hooks)["loss"].nanmean().item()

    g = torch.Generator().manual_seed(0)
    base, ablated = gain([]), gain(ablation_hooks(model, heads))
    layers = [int(h[1:].split(".")[0]) for h in heads]
    controls = []
    for _ in range(3):
        pick = []
        for l in layers:
            free = [f"a{l}.h{h}" for h in torch.randperm(H, generator=g).tolist() if f"a{l}.h{h}" not in heads + pick]
            pick.append(free[0])
        controls.append(gain(ablation_hooks(model, pick)))
    assert base - ablated > max(base - c for c in controls), (base, ablated, controls)


def test_corpus_rows_put_the_answer_after_end_pos():
    from tutorial_lib.tasks.tokenizers import zoo_tokenizer
    from tutorial_lib.zoo.multitask import MixSpec, MultiTaskCorpus

    tok = zoo_tokenizer()
    corpus = MultiTaskCorpus(tok, MixSpec(pool_size=200), seed=0)
    g = torch.Generator().manual_seed(0)
    groups = corpus.batch_fn(0, g)
    assert sum(t.shape[0] for t, _ in groups) == sum(v for k, v in corpus.spec.rows.items() if k != "induction")
    for tokens, mask in groups:
        assert tokens.shape == mask.shape
        # task rows: exactly one supervised position, followed by a non-pad answer token; the group is cut
        # right after its longest row's answer (no all-pad column at the end)
        for row in range(tokens.shape[0]):
            pos = mask[row].nonzero()[:, 0]
            assert len(pos) == 1
            assert tokens[row, pos[0] + 1] != tok.pad_token_id
            assert tokens[row, 0] == tok.bos_token_id
        assert (tokens[:, -1] != tok.pad_token_id).any()
    g2 = torch.Generator().manual_seed(0)
    assert all(torch.equal(a[0], b[0]) for a, b in zip(corpus.batch_fn(0, g2), groups))
    # the padded form holds the same rows
    g3 = torch.Generator().manual_seed(0)
    tokens, mask = corpus.padded_batch_fn(0, g3)
    assert tokens.shape[0] == sum(t.shape[0] for t, _ in groups) and int(mask.sum()) == tokens.shape[0]


def test_induction_models_are_shipped():
    from tutorial_lib.zoo.induction_models import SHIPPED

    assert set(SHIPPED) <= set(store.zoo_names())


@pytest.mark.parametrize("name", ["zoo-induction-small", "zoo-induction-deep"])
def test_shipped_induction_models_form_the_pair(name):
    """Loaded by name, offline; the manifest's figures re-measured; the issue's induction targets checked by
    attention (previous-token and induction scores) and by ablation, not by the loss alone."""
    from tutorial_lib.zoo.loading import load_model
    from tutorial_lib.zoo.induction_models import pair_metrics

    model = load_model(name, verbose=False)
    assert model.tokenizer is None and model.cfg.attn_only and model.cfg.positional_embedding_type == "rotary"
    again = pair_metrics(model)
    for key, value in store.read_manifest()["models"][name]["metrics"].items():
        if isinstance(value, float):
            assert again[key] == pytest.approx(value, abs=2e-3), key
        else:
            assert again[key] == value, key
    assert again["formed"] and again["loss"] <= 1.0
    assert again["induction_score"] >= 0.5 and again["prev_score"] >= 0.5
    assert again["loss_prev_ablated"] > again["loss_control_ablated"] + 0.5  # the previous-token head is needed


def test_build_rejects_unknown_names():
    from tutorial_lib.zoo.build import build_all

    with pytest.raises(ValueError, match="zoo-induction-small"):
        build_all(only="zoo-nonsense")


def test_cli_rejects_bad_thread_count(capsys):
    from tutorial_lib.zoo.__main__ import main

    with pytest.raises(SystemExit):
        main(["build", "--only", "zoo-multitask", "--threads", "0"])
    assert "--threads must be >= 1, got 0" in capsys.readouterr().err


def test_multitask_build_is_reproducible_in_miniature(tmp_path):
    """The recipe's code path end to end, shortened: same seed, one thread -> the same weights twice; the
    entry written to the manifest records the recipe (mix, threads) and re-evaluates to its own metrics."""
    from tutorial_lib.zoo.build import build_multitask
    from tutorial_lib.zoo.multitask import MixSpec

    spec = MixSpec(rows={"addition": 4, "addition_small": 4, "multiple_choice": 2}, pool_size=300)
    a, metrics, _ = build_multitask(steps=3, spec=spec, progress=False, directory=tmp_path / "a")
    b, _, _ = build_multitask(steps=3, spec=spec, progress=False, save=False)
    for k, v in a.state_dict().items():
        assert torch.equal(v, b.state_dict()[k]), k
    entry = store.read_manifest(tmp_path / "a")["models"][MULTI]
    assert entry["torch_threads"] == 1 and entry["mix"]["rows"] == spec.rows and entry["steps"] == 3
    assert entry["metrics"] == metrics


def test_restarted_schedule_continues_the_first_cycle_and_resumes(tmp_path, monkeypatch):
    """A build with ``restart``: the first cycle is the one-cycle build unchanged (its checkpoint equals that
    build's weights), the second trains on from it (counted on from the first cycle's steps in the checkpoints
    and the manifest), and a resumed build with both cycles finished loads, not retrains, the same weights."""
    from tutorial_lib.zoo import build
    from tutorial_lib.zoo.multitask import MixSpec

    monkeypatch.setitem(build.VARIANTS[MEDIUM], "checkpoints", [0, 2, 3, 4, 5])
    spec = MixSpec(rows={"addition": 4, "addition_small": 4, "multiple_choice": 2}, pool_size=300)
    small = dict(n_layers=1, n_heads=2, d_head=8, d_model=16, d_mlp=32, rotary_dim=8)
    restart = dict(steps=2, lr=1e-3, warmup=0.0, seed=1)
    kw = dict(name=MEDIUM, spec=spec, config=small, progress=False)
    one, _, _ = build.build_multitask(train={"steps": 3, "restart": None}, save=False, **kw)
    two, _, res = build.build_multitask(train={"steps": 3, "restart": restart}, directory=tmp_path, **kw)
    assert sorted(res.checkpoints) == [0, 2, 3, 4, 5] and len(res.losses) == 5
    for k, v in one.state_dict().items():
        if k in res.checkpoints[3]:
            assert torch.equal(res.checkpoints[3][k], v), k
    assert any(not torch.equal(v, two.state_dict()[k]) for k, v in one.state_dict().items() if v.is_floating_point())
    entry = store.read_manifest(tmp_path)["models"][MEDIUM]
    assert entry["steps"] == 5 and entry["train"]["restart"] == restart
    assert entry["checkpoints"]["steps"] == [0, 2, 3, 4, 5]
    seen = entry["checkpoints"]["tokens_seen"]
    assert all(b > a for a, b in zip(seen, seen[1:]))
    again, _, _ = build.build_multitask(train={"steps": 3, "restart": restart}, directory=tmp_path, resume=True, **kw)
    for k, v in two.state_dict().items():
        assert torch.equal(v, again.state_dict()[k]), k
    # --steps N asks for a one-cycle build of N steps
    quick, _, _ = build.build_multitask(steps=3, train={"restart": restart}, save=False, **kw)
    for k, v in one.state_dict().items():
        assert torch.equal(v, quick.state_dict()[k]), k


def test_restart_can_leave_parameters_untrained(tmp_path, monkeypatch):
    """``restart["frozen"]`` (issue 30, pilot K2f): the named parameters end the restart as the first cycle left
    them, every other weight trains on, the model's parameters are trainable again afterwards, and a prefix that
    names no parameter is refused with the names that exist."""
    from tutorial_lib.zoo import build
    from tutorial_lib.zoo.multitask import MixSpec

    monkeypatch.setitem(build.VARIANTS[MEDIUM], "checkpoints", [0, 3, 5])
    spec = MixSpec(rows={"addition": 4, "addition_small": 4, "multiple_choice": 2}, pool_size=300)
    small = dict(n_layers=1, n_heads=2, d_head=8, d_model=16, d_mlp=32, rotary_dim=8)
    restart = dict(steps=2, lr=1e-2, warmup=0.0, seed=1, frozen=["embed.", "unembed."])
    kw = dict(name=MEDIUM, spec=spec, config=small, progress=False)
    model, _, res = build.build_multitask(train={"steps": 3, "restart": restart}, directory=tmp_path / "a", **kw)
    first, final = res.checkpoints[3], model.state_dict()
    for k in ("embed.W_E", "unembed.W_U", "unembed.b_U"):
        assert torch.equal(first[k], final[k]), k
    for k in ("blocks.0.attn.W_Q", "blocks.0.mlp.W_in", "ln_final.w"):
        assert not torch.equal(first[k], final[k]), k
    assert all(p.requires_grad for p in model.parameters())
    # without the entry the same restart trains them
    model2, _, res2 = build.build_multitask(train={"steps": 3, "restart": {**restart, "frozen": []}},
                                            directory=tmp_path / "b", **kw)
    assert not torch.equal(res2.checkpoints[3]["embed.W_E"], model2.state_dict()["embed.W_E"])
    with pytest.raises(ValueError, match="'embedding.'.*'embed.'"):
        build.build_multitask(train={"steps": 3, "restart": {**restart, "frozen": ["embedding."]}}, save=False, **kw)
    with pytest.raises(ValueError, match="list of parameter-name prefixes"):
        build.frozen_parameters(model, "embed.")
    # restart["head_dropout"] reaches the trainer: other weights than without it, and its keys are checked
    model3, _, _ = build.build_multitask(train={"steps": 3, "restart": {**restart, "head_dropout": {"p": 0.5, "seed": 3}}},
                                         save=False, **kw)
    assert not torch.equal(model3.state_dict()["blocks.0.attn.W_Q"], final["blocks.0.attn.W_Q"])
    with pytest.raises(ValueError, match="'p' and 'seed'"):
        build.build_multitask(train={"steps": 3, "restart": {**restart, "head_dropout": {"p": 0.5}}}, save=False, **kw)


def test_restart_head_dropout_on_the_task_rows_is_the_pilots(monkeypatch):
    """``restart["head_dropout"]["rows"] = "tasks"`` (issue 30, pilot taskdrop): the same weights, bit for bit, as
    the pilot's code (its patches, reproduced below: it marks the induction and plain groups' tokens and
    patches the trainer's grouped loss to spare them), and other weights than dropout on every row."""
    from tutorial_lib.zoo import build, multitask, split_induction, train as T
    from tutorial_lib.zoo.multitask import MixSpec

    spec = MixSpec(rows={"addition": 4, "multiple_choice": 2, "induction": 2}, pool_size=200, induction_vocab="split",
                   induction_closed_vocab=True, induction_seq_len=20, induction_len=(2, 4), plain_rows=2, plain_len=6)
    small = dict(n_layers=1, n_heads=2, d_head=8, d_model=16, d_mlp=32, rotary_dim=8)
    restart = dict(steps=3, lr=1e-2, warmup=0.0, seed=1, frozen=["embed.", "unembed."])
    kw = dict(name=MEDIUM, spec=spec, config=small, progress=False, save=False)

    def built(rows):
        drop = {"p": 0.5, "seed": 3, **({"rows": rows} if rows else {})}
        return build.build_multitask(train={"steps": 2, "restart": {**restart, "head_dropout": drop}}, **kw)[0]

    tasks, every = built("tasks").state_dict(), built(None).state_dict()
    assert any(not torch.equal(v, every[k]) for k, v in tasks.items())

    def exempt(group):
        group[0]._no_head_dropout = True
        return group

    ind, plain = multitask.MultiTaskCorpus._induction_group, split_induction.PlainRows.__call__
    monkeypatch.setattr(multitask.MultiTaskCorpus, "_induction_group", lambda self, *a, **k: exempt(ind(self, *a, **k)))
    monkeypatch.setattr(split_induction.PlainRows, "__call__", lambda self, g: exempt(plain(self, g)))
    marked = []

    def grouped(model, groups, fast=False, head_keep=None):
        total, count = 0.0, 0
        for g in groups:
            n = float(g[1][:, :-1].sum())
            spare = getattr(g[0], "_no_head_dropout", False)
            marked.append(spare)
            total = total + T.masked_next_token_loss(model, g[0], g[1], fast=fast, vocab=g[2] if len(g) == 3 else None,
                                                     head_keep=None if spare else head_keep) * n
            count += n
        return total / count

    monkeypatch.setattr(T, "grouped_next_token_loss", grouped)
    pilot = built(None).state_dict()
    assert any(marked) and not all(marked)
    for k, v in tasks.items():
        assert torch.equal(v, pilot[k]), k
    with pytest.raises(ValueError, match="list of task names out of"):
        built("copying")
    with pytest.raises(ValueError, match=r"out of \['addition', 'multiple_choice'\]"):
        built(["induction"])
    # a list of tasks: their rows only (here multiple choice's: other weights than every task's rows)
    monkeypatch.undo()
    assert any(not torch.equal(v, tasks[k]) for k, v in built(["multiple_choice"]).state_dict().items())


def test_shared_code_build_trains_with_the_code_and_saves_a_plain_model(tmp_path, monkeypatch):
    """``train["shared_code"]`` (issue 30): the frozen code is in W_E and W_U from step 0, the saved model and its
    checkpoints are plain (they load as any zoo model, with the same outputs), and a resumed build loads the same
    weights."""
    from tutorial_lib.zoo import build
    from tutorial_lib.zoo.multitask import MixSpec
    from tutorial_lib.zoo.shared_code import has_shared_code, shared_code

    monkeypatch.setitem(build.VARIANTS[MEDIUM], "checkpoints", [0, 3])
    spec = MixSpec(rows={"addition": 4, "addition_small": 4, "multiple_choice": 2}, pool_size=300)
    small = dict(n_layers=1, n_heads=2, d_head=8, d_model=16, d_mlp=32, rotary_dim=8)
    code = {"scale": 4.0, "seed": 7}
    kw = dict(name=MEDIUM, spec=spec, config=small, progress=False)
    plain, _, plain_res = build.build_multitask(train={"steps": 3, "restart": None, "shared_code": None},
                                                directory=tmp_path / "plain",
                                                **kw)
    coded, _, res = build.build_multitask(train={"steps": 3, "restart": None, "shared_code": code},
                                          directory=tmp_path, **kw)
    assert not has_shared_code(coded) and set(coded.state_dict()) == set(plain.state_dict())
    C = shared_code(coded.cfg.d_vocab, coded.cfg.d_model, 4.0, seed=7)
    start = res.checkpoints[0]
    assert torch.allclose(start["embed.W_E"] - C, plain_res.checkpoints[0]["embed.W_E"], atol=1e-6)
    assert torch.allclose(start["unembed.W_U"] - C.T, plain_res.checkpoints[0]["unembed.W_U"], atol=1e-6)
    assert all(torch.equal(v, coded.state_dict()[k]) for k, v in res.checkpoints[3].items())
    entry = store.read_manifest(tmp_path)["models"][MEDIUM]
    assert entry["train"]["shared_code"] == code
    # the medium build records its copying (issue 30), as copying_contrast measures it on the saved model
    from tutorial_lib.zoo.copying import copying_contrast

    assert entry["copying"]["protocol"] == build.COPYING_PROTOCOL and entry["copying"]["trained"]["n_tokens"] == 241
    again_measured = copying_contrast(coded, mix=entry["mix"], **build.COPYING_PROTOCOL).record(**build.COPYING_PROTOCOL)
    assert again_measured == entry["copying"]
    from safetensors.torch import load_file

    loaded = build.make_multitask_model(coded.tokenizer, **{**build.MEDIUM_CONFIG, **small}).eval()
    loaded.load_state_dict(load_file(str(tmp_path / entry["file"])))  # strict: the plain keys only
    tokens = torch.randint(0, coded.cfg.d_vocab, (2, 10), generator=torch.Generator().manual_seed(0))
    assert torch.allclose(loaded(tokens), coded(tokens), atol=1e-5)
    again, _, _ = build.build_multitask(train={"steps": 3, "restart": None, "shared_code": code},
                                        directory=tmp_path, resume=True, **kw)
    assert all(torch.equal(v, again.state_dict()[k]) for k, v in coded.state_dict().items())


def test_warmup_heads_keep_the_other_heads_out_of_the_induction_warmup(tmp_path, monkeypatch):
    """``train["warmup_heads"] = k`` (issue 30, pilot K): in the induction-only warm-up only the first k heads of each
    layer work (the others' W_O is zero and untrained), at its end their W_O is back at its initial value and trains
    from there; a build stopped after the warm-up resumes to the same weights (the reset is not done twice)."""
    from tutorial_lib.zoo import build
    from tutorial_lib.zoo.multitask import MixSpec

    monkeypatch.setitem(build.VARIANTS[MEDIUM], "checkpoints", [0, 1, 2, 3, 9])  # the build's last step is added
    spec = MixSpec(**{**build.MEDIUM_MIX, "pool_size": 300, "rows": {"addition": 4, "induction": 4},
                      "induction_warmup_steps": 2, "induction_warmup_rows": 4})
    small = dict(n_layers=2, n_heads=4, d_head=8, d_model=16, d_mlp=32, rotary_dim=8)
    train = {"steps": 4, "restart": None, "warmup_heads": 2}
    kw = dict(name=MEDIUM, spec=spec, config=small, progress=False, save_every=1)
    model, _, res = build.build_multitask(train=train, directory=tmp_path / "a", **kw)
    ck = res.checkpoints
    assert sorted(ck) == [0, 1, 2, 3, 4]
    for l in range(2):
        w = [ck[s][f"blocks.{l}.attn.W_O"].float() for s in range(5)]
        assert w[1][2:].abs().max() == 0 and w[2][2:].abs().max() == 0  # silenced through the warm-up
        assert (w[2][:2] - w[0][:2]).abs().max() > 1e-3  # ... while the first two heads trained
        assert 0 < (w[3][2:] - w[0][2:]).abs().max() < 0.02  # back at the start, one update later
        assert (w[4][2:] - w[3][2:]).abs().max() > 0
        q = [ck[s][f"blocks.{l}.attn.W_Q"].float() for s in (0, 2)]
        assert torch.allclose(q[1][2:], q[0][2:], rtol=1e-3, atol=1e-6)  # no gradient reached them (weight decay only)
    # stop the same build at step 3 (after the reset), then resume it
    real = build._warmup_heads

    def stopping(model, batch_fn, k, warmup_steps):
        inner = real(model, batch_fn, k, warmup_steps)

        def fn(step, gen):
            if step == 3:
                raise KeyboardInterrupt
            return inner(step, gen)
        return fn

    monkeypatch.setattr(build, "_warmup_heads", stopping)
    with pytest.raises(KeyboardInterrupt):
        build.build_multitask(train=train, directory=tmp_path / "b", **kw)
    monkeypatch.setattr(build, "_warmup_heads", real)
    again, _, _ = build.build_multitask(train=train, directory=tmp_path / "b", resume=True, **kw)
    assert all(torch.equal(v, again.state_dict()[k]) for k, v in model.state_dict().items())


def test_split_build_reports_the_held_out_copying_targets(tmp_path, monkeypatch):
    """A medium build on split induction rows (issue 30) counts the held-out copying targets among its targets: three
    steps copy nothing, and the manifest says which held-out targets were missed."""
    from tutorial_lib.zoo import build
    from tutorial_lib.zoo.multitask import MixSpec

    monkeypatch.setitem(build.VARIANTS[MEDIUM], "checkpoints", [])
    spec = MixSpec(**{**build.MEDIUM_MIX, "pool_size": 300, "induction_vocab": "split",
                      "rows": {"addition": 4, "induction": 4}, "induction_warmup_steps": 0})
    small = dict(n_layers=1, n_heads=2, d_head=8, d_model=16, d_mlp=32, rotary_dim=8)
    build.build_multitask(name=MEDIUM, spec=spec, config=small, train={"steps": 3, "restart": None},
                          directory=tmp_path, progress=False)
    entry = store.read_manifest(tmp_path)["models"][MEDIUM]
    assert entry["copying"]["held_out"]["n_tokens"] == 1584 and entry["copying"]["trained"]["n_tokens"] == 1585
    assert {"copying_held_out_drop", "copying_held_out_top1"} <= set(entry["targets_missed"])


def test_medium_mix_induction_rows_are_closed_vocabulary_language_modelling():
    """The medium recipe's induction group after the warm-up: the trained half of the split only (issue 30), weight 1
    on the copyable tokens and 0.1 elsewhere, the softmax over those tokens; its 01-start greater-than rows sit beside
    the others; the warm-up's rows are induction only, every copy near its source."""
    from tutorial_lib.tasks.tokenizers import zoo_tokenizer
    from tutorial_lib.zoo.build import MEDIUM_MIX
    from tutorial_lib.zoo.multitask import MixSpec, MultiTaskCorpus, induction_ids

    tok = zoo_tokenizer()
    corpus = MultiTaskCorpus(tok, MixSpec(**{**MEDIUM_MIX, "pool_size": 200}), seed=0)
    groups = corpus.batch_fn(MEDIUM_MIX["induction_warmup_steps"], torch.Generator().manual_seed(0))  # after the warm-up
    triples = [g for g in groups if len(g) == 3]
    assert len(triples) == 1
    tokens, mask, vocab = triples[0]
    trained = set(induction_ids(tok, "split"))
    assert len(trained) == 1585
    assert set(vocab.tolist()) == trained and tokens.shape[0] == MEDIUM_MIX["rows"]["induction"]
    assert set(tokens[:, 1:].flatten().tolist()) <= trained
    assert torch.allclose(mask[:, :-1].unique(), torch.tensor([0.1, 1.0]))
    assert "greater_than_01" in corpus.pools
    # the warm-up's rows: induction only, 64 per step, every copy within 0-2 tokens of its source, the first 256
    # trained tokens (the curriculum's first width)
    warm = corpus.batch_fn(0, torch.Generator().manual_seed(0))
    assert len(warm) == 1 and warm[0][0].shape[0] == MEDIUM_MIX["induction_warmup_rows"] == 64
    assert len(warm[0][2]) == 256 and set(warm[0][2].tolist()) < trained
    assert MEDIUM_MIX["induction_near"] == 1.0
    with pytest.raises(ValueError, match="closed-vocabulary"):
        corpus.padded_batch_fn(0, torch.Generator().manual_seed(0))


def test_induction_warmup_trains_induction_rows_only_then_the_whole_mix():
    from tutorial_lib.tasks.tokenizers import zoo_tokenizer
    from tutorial_lib.zoo.build import MEDIUM_MIX
    from tutorial_lib.zoo.multitask import MixSpec, MultiTaskCorpus

    tok = zoo_tokenizer()
    spec = MixSpec(**{**MEDIUM_MIX, "pool_size": 200, "induction_warmup_steps": 3, "induction_warmup_rows": 16})
    corpus = MultiTaskCorpus(tok, spec, seed=0)
    early = corpus.batch_fn(2, torch.Generator().manual_seed(0))
    assert len(early) == 1 and early[0][0].shape == (16, MEDIUM_MIX["induction_seq_len"]) and len(early[0]) == 3
    late = corpus.batch_fn(3, torch.Generator().manual_seed(0))
    assert len(late) > 5 and sum(len(g) == 3 for g in late) == 1  # every task again, one induction group
    # deterministic in (step, generator state): a resumed build sees the same batches
    again = MultiTaskCorpus(tok, spec, seed=0).batch_fn(2, torch.Generator().manual_seed(0))
    assert torch.equal(again[0][0], early[0][0])
    plain = MultiTaskCorpus(tok, MixSpec(**{**MEDIUM_MIX, "pool_size": 200, "induction_warmup_steps": 0}), seed=0)
    assert plain.induction_warmup is None and len(plain.batch_fn(0, torch.Generator().manual_seed(0))) > 5


def _copy_distances(tokens, mask):
    """For every copyable position (loss weight 1): how far back the token it predicts last occurred."""
    out = []
    for row, m in zip(tokens.tolist(), mask.tolist()):
        for p, w in enumerate(m[:-1]):
            if w == 1.0:
                t = row[p + 1]
                earlier = [q for q in range(p + 1) if row[q] == t]
                out.append(p + 1 - earlier[-1])
    return torch.tensor(out)


def test_mixed_phase_can_place_copies_far_from_their_source():
    """``induction_near_mixed`` sets the near fraction after the warm-up only: warm-up copies stay within
    0-2 tokens of their source (at most 8 + 2 back), mixed-phase copies reach much further."""
    from tutorial_lib.tasks.tokenizers import zoo_tokenizer
    from tutorial_lib.zoo.build import MEDIUM_MIX
    from tutorial_lib.zoo.multitask import MixSpec, MultiTaskCorpus

    tok = zoo_tokenizer()
    spec = MixSpec(**{**MEDIUM_MIX, "pool_size": 200, "induction_warmup_steps": 1, "induction_near_mixed": 0.0})
    corpus = MultiTaskCorpus(tok, spec, seed=0)
    (warm,) = corpus.batch_fn(0, torch.Generator().manual_seed(0))
    mixed = [g for g in corpus.batch_fn(1, torch.Generator().manual_seed(0)) if len(g) == 3][0]
    d_warm, d_mixed = _copy_distances(warm[0], warm[1]), _copy_distances(mixed[0], mixed[1])
    assert len(d_warm) > 100 and int(d_warm.max()) <= MEDIUM_MIX["induction_len"][1] + 2
    assert float((d_mixed > 10).float().mean()) > 0.3, d_mixed
    same = MultiTaskCorpus(tok, MixSpec(**{**MEDIUM_MIX, "pool_size": 200, "induction_warmup_steps": 1,
                                          "induction_near_mixed": None}), seed=0)
    plain = [g for g in same.batch_fn(1, torch.Generator().manual_seed(0)) if len(g) == 3][0]
    assert int(_copy_distances(plain[0], plain[1]).max()) <= MEDIUM_MIX["induction_len"][1] + 2  # None: as warm-up
    # the shipped recipe: half near, half anywhere later
    assert MEDIUM_MIX["induction_near_mixed"] == 0.5
    shipped = MultiTaskCorpus(tok, MixSpec(**{**MEDIUM_MIX, "pool_size": 200, "induction_warmup_steps": 1}), seed=0)
    half = [g for g in shipped.batch_fn(1, torch.Generator().manual_seed(0)) if len(g) == 3][0]
    share = float((_copy_distances(half[0], half[1]) > 10).float().mean())
    assert 0.1 < share < float((d_mixed > 10).float().mean()), share


def test_auto_prefers_the_medium_model_when_shipped(tmp_path, monkeypatch):
    from tutorial_lib.zoo import loading

    monkeypatch.setattr(store, "zoo_names", lambda directory=None: ["zoo-induction-small", "zoo-multitask"])
    assert loading.default_zoo_model() == "zoo-multitask"
    monkeypatch.setattr(store, "zoo_names", lambda directory=None: ["zoo-multitask", "zoo-multitask-medium"])
    assert loading.default_zoo_model() == "zoo-multitask-medium"


def test_a_compacted_resume_state_ships_the_same_files(tmp_path, monkeypatch):
    """A build stopped after its first cycle, its resume state compacted (checkpoints as they ship), then resumed,
    writes the same weights and checkpoint files, bit for bit, as a build never stopped; the state shrinks."""
    from tutorial_lib.zoo import build
    from tutorial_lib.zoo.multitask import MixSpec

    monkeypatch.setitem(build.VARIANTS[MEDIUM], "checkpoints", [0, 2, 3, 5])
    spec = MixSpec(rows={"addition": 4, "addition_small": 4, "multiple_choice": 2}, pool_size=300)
    small = dict(n_layers=1, n_heads=2, d_head=8, d_model=16, d_mlp=32, rotary_dim=8)
    train = {"steps": 3, "restart": dict(steps=2, lr=1e-3, warmup=0.0, seed=1), "shared_code": {"scale": 4.0, "seed": 7}}
    kw = dict(name=MEDIUM, spec=spec, config=small, progress=False, train=train, save_every=1)
    build.build_multitask(directory=tmp_path / "a", work_dir=tmp_path / "wa", **kw)

    def stop(*a, **k):
        raise KeyboardInterrupt("a session ends after the first cycle")

    with monkeypatch.context() as mp:
        mp.setattr(build, "_restart_cycle", stop)
        with pytest.raises(KeyboardInterrupt):
            build.build_multitask(directory=tmp_path / "b", work_dir=tmp_path / "wb", **kw)
    before, after = build.compact_state(tmp_path / "wb" / "train_state.pt")
    assert after < before
    build.build_multitask(directory=tmp_path / "b", work_dir=tmp_path / "wb", resume=True, **kw)
    a, b = (store.read_manifest(tmp_path / d)["models"][MEDIUM] for d in ("a", "b"))
    assert a["sha256"] == b["sha256"] and a["checkpoints"]["sha256"] == b["checkpoints"]["sha256"]
