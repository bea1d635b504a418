"""tutorial_lib.zoo.store: training checkpoints saved beside a zoo model (one fp16 safetensors file, sha256 checked)."""
import pytest
import torch

from conftest import make_tiny_model
from tutorial_lib.zoo import store

torch.set_num_threads(1)


def _saved(tmp_path, n=2):
    model = make_tiny_model("planted", seed=0)
    store.save_model(model, "toy", meta={"steps": 10}, directory=tmp_path, tokenizer_dir=None)
    states = {s: make_tiny_model("planted", seed=s + 1).state_dict() for s in range(0, 10 * n, 10)}
    path = store.save_checkpoints("toy", states, {s: 100 * s for s in states}, directory=tmp_path)
    return model, states, path


def test_checkpoints_round_trip_in_fp16_with_steps_and_tokens(tmp_path):
    _, states, path = _saved(tmp_path, n=3)
    assert store.has_checkpoints("toy", tmp_path)
    info = store.read_manifest(tmp_path)["models"]["toy"]["checkpoints"]
    assert info["steps"] == [0, 10, 20] and info["tokens_seen"] == [0, 1000, 2000] and info["dtype"] == "float16"
    assert info["sha256"] == store.sha256_file(path)
    loaded = store.load_checkpoints("toy", tmp_path)
    assert [(s, t) for s, t, _ in loaded] == [(0, 0), (10, 1000), (20, 2000)]
    for (step, _, sd) in loaded:
        ref = states[step]
        kept = [k for k in ref if not (k.endswith(("IGNORE", "mask")) or "rotary" in k)]
        assert sorted(sd) == sorted(kept)
        for k in kept:  # fp16 rounding only, and back in float32
            assert sd[k].dtype == torch.float32
            assert torch.equal(sd[k], ref[k].half().float()), k


def test_checkpoint_refusals_name_what_exists(tmp_path):
    model = make_tiny_model("planted", seed=0)
    with pytest.raises(ValueError, match="before its checkpoints"):
        store.save_checkpoints("toy", {0: model.state_dict()}, {0: 0}, directory=tmp_path)
    store.save_model(model, "plain", meta={}, directory=tmp_path, tokenizer_dir=None)
    with pytest.raises(ValueError, match="ships no training checkpoints; models with checkpoints: none"):
        store.load_checkpoints("plain", tmp_path)
    with pytest.raises(ValueError, match="unknown zoo model 'nope'"):
        store.load_checkpoints("nope", tmp_path)
    _, _, path = _saved(tmp_path)
    with pytest.raises(ValueError, match=r"ships no training checkpoints; models with checkpoints: \['toy'\]"):
        store.load_checkpoints("plain", tmp_path)
    path.write_bytes(path.read_bytes()[:-10])  # truncated
    with pytest.raises(store.ZooIntegrityError, match="does not match the manifest"):
        store.load_checkpoints("toy", tmp_path)


def test_shipped_checkpoints_load_into_their_model():
    """Every shipped checkpoint file matches its manifest and loads into its model (the last one is the model)."""
    shipped = [n for n in store.zoo_names() if store.has_checkpoints(n)]
    if not shipped:
        pytest.skip("no zoo model ships checkpoints")
    for name in shipped:
        model = store.load_model_from_zoo(name)
        ckpts = store.load_checkpoints(name)
        entry = store.read_manifest()["models"][name]
        assert ckpts[-1][0] == entry["steps"]
        model.load_state_dict(ckpts[-1][2], strict=False)
        final = store.load_model_from_zoo(name).state_dict()
        for k, v in ckpts[-1][2].items():
            assert torch.allclose(v, final[k], atol=2e-3 * max(1.0, float(final[k].abs().max()))), k
