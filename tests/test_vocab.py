"""Tests for tutorial_lib.tasks.vocab: every task word is one GPT-2 token, the lists are what the tasks need."""
from tutorial_lib.tasks import vocab


def test_task_words_are_single_gpt2_tokens(gpt2):
    groups = [vocab.NOUNS, vocab.NAMES, vocab.PLACES, vocab.OBJECTS, vocab.COLORS, vocab.ANIMALS, vocab.FILLER_WORDS]
    bad = [w for g in groups for w in g if len(gpt2(" " + w)["input_ids"]) != 1]
    assert bad == []
    assert len(vocab.NOUNS) == 120 and len(set(vocab.NOUNS)) == 120
    assert len(vocab.FILLER_WORDS) >= 200
    assert not set(vocab.FILLER_WORDS) & set(vocab.TASK_WORDS)
    assert len(vocab.WORDS) == len(set(vocab.WORDS))
