"""Tests for tutorial_lib.zoo.loading: names, the offline fallback, zoo models (the hub: test_models_hub.py)."""
import shutil
import time

import pytest
import torch

import tutorial_lib.zoo.loading as models
from tutorial_lib.core.device import get_device
from tutorial_lib.zoo import store


def test_unknown_name_lists_valid_names():
    with pytest.raises(ValueError) as err:
        models.load_model("gpt5-mega", verbose=False)
    msg = str(err.value)
    assert "gpt5-mega" in msg and "auto" in msg and "gpt2" in msg
    for name in store.zoo_names():
        assert name in msg
    with pytest.raises(ValueError):
        models.load_model(42, verbose=False)


def test_auto_falls_back_offline_fast(monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("TUTORIAL_MODEL", raising=False)
    t = time.time()
    model = models.load_model("auto")
    took = time.time() - t
    assert took < 20, f"offline fallback took {took:.1f}s"
    out = capsys.readouterr().out
    assert "zoo" in out and "offline mode was asked for (HF_HUB_OFFLINE" in out
    assert model.cfg.d_vocab == len(model.tokenizer)
    assert model.unembed.W_U.T.is_contiguous()  # core.view.unembedding_stored_transposed
    tokens = model.to_tokens(" The war lasted from the year 1732 to the year 17")
    assert model.to_str_tokens(tokens[0])[7:9] == [" 17", "32"]


def test_hub_probe_without_env_does_not_hang(monkeypatch):
    # network is closed on this machine: the probe must give up within its timeout
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    t = time.time()
    models.hub_reachable(timeout=1.0)
    assert time.time() - t < 3


def test_explicit_hub_name_offline_fails_fast_with_advice(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(models, "_hub_cached", lambda *a, **k: False)
    t = time.time()
    with pytest.raises(ConnectionError, match="zoo"):
        models.load_model("gpt2", verbose=False)
    assert time.time() - t < 10


def test_corrupted_weights_are_refused(tmp_path):
    src = store.manifest_path().parent
    dst = tmp_path / "zoo"
    shutil.copytree(src, dst)
    name = store.zoo_names()[0]
    entry = store.read_manifest(dst)["models"][name]
    weights = dst / entry["file"]
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])  # truncated
    with pytest.raises(store.ZooIntegrityError, match="corrupted or truncated"):
        store.load_model_from_zoo(name, directory=dst)
    weights.unlink()
    with pytest.raises(store.ZooIntegrityError, match="missing"):
        store.load_model_from_zoo(name, directory=dst)


def test_zoo_round_trip(tmp_path):
    name = store.zoo_names()[0]
    model = store.load_model_from_zoo(name)
    d = tmp_path / "z"
    shutil.copytree(store.manifest_path().parent / "tokenizer", d / "tokenizer")
    store.save_model(model, "copy", {"description": "test"}, d)
    again = store.load_model_from_zoo("copy", directory=d)
    tokens = torch.randint(3, 100, (2, 5))
    assert torch.allclose(model(tokens), again(tokens))


def test_device_choice():
    assert get_device("cpu") == torch.device("cpu")
    assert get_device() == get_device()  # chosen once
    with pytest.raises(ValueError, match="unknown device"):
        get_device("tpu9")
