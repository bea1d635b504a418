"""Tests for tutorial_lib.tasks.word_tokenizer: the zoo's word-level tokenizer, built from tasks.vocab."""
import warnings

from conftest import make_tiny_model

from tutorial_lib.tasks import vocab
from tutorial_lib.tasks import word_tokenizer as zt


def test_zoo_tokenizer_on_disk_matches_vocab(zoo):
    """data/zoo/tokenizer/ must be what build_tokenizer(WORDS) gives (rebuild after editing vocab.py)."""
    fresh = zt.build_tokenizer(vocab.WORDS).get_vocab()
    assert zoo.get_vocab() == fresh


def test_zoo_knows_every_word(zoo):
    unk = zoo.unk_token_id
    for w in vocab.WORDS:
        for text in (w, " " + w):
            ids = zoo(text, add_special_tokens=False)["input_ids"]
            assert len(ids) == 1 and ids[0] != unk, (text, ids)


def test_zoo_years_split_like_gpt2(zoo, gpt2):
    conv = zoo.convert_ids_to_tokens
    assert conv(zoo(" 1732")["input_ids"]) == [" 17", "32"]
    assert conv(zoo(" 1702")["input_ids"]) == [" 17", "02"]
    for y in range(100):
        assert len(zoo(f"{y:02d}")["input_ids"]) == 1
    # where GPT-2 splits " XXYY" as " XX" + "YY", the zoo does the same, token text for token text
    for year in (1132, 1288, 1455, 1645, 1732):
        g = [t.replace("Ġ", " ") for t in gpt2.convert_ids_to_tokens(gpt2(f" {year}")["input_ids"])]
        assert len(g) == 2
        assert conv(zoo(f" {year}")["input_ids"]) == g
    text = "<|endoftext|> The war lasted from the year 1732 to the year 17"
    assert zoo(text)["input_ids"][0] == zoo.bos_token_id


def test_zoo_with_transformer_lens(zoo):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make_tiny_model(n_layers=1, d_model=16, d_head=4, n_heads=4, d_vocab=len(zoo), act_fn="relu", d_mlp=32,
                                tokenizer=zoo)
    text = " The war lasted from the year 1732 to the year 17"
    toks = model.to_tokens(text)
    assert toks[0].tolist() == [zoo.bos_token_id] + zoo(text)["input_ids"]
    strs = model.to_str_tokens(text)
    assert strs[0] == "<|endoftext|>" and strs[7:9] == [" 17", "32"] and strs[-1] == " 17"
    assert model.to_single_token("32") == zoo.convert_tokens_to_ids("32")
    assert model(toks).shape == (1, toks.shape[1], len(zoo))
