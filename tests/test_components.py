import pytest

from tutorial_lib.core.components import (Component, all_components, all_heads, all_mlps, output_hook, parse,
                                     parse_many, sort_key)


def test_parse_round_trip():
    for name in ["a5.h1", "m10", "embed", "logits", "a0.h3.q", "a2.h0.v"]:
        assert str(parse(name)) == name
    assert parse("a5.h1") == Component("head", 5, 1)
    assert parse("a5.h1.k").node == parse("a5.h1")


@pytest.mark.parametrize("bad", ["a5", "h1", "mlp3", "a1.h2.x", "", "L5H1", 7])
def test_unknown_names_are_rejected_with_accepted_forms(bad):
    with pytest.raises(ValueError, match="accepted"):
        parse(bad)


def test_existence_checked_against_model(tiny_model, tiny_attn_only):
    parse("a1.h3", tiny_model)
    with pytest.raises(ValueError, match="layers 0..1"):
        parse("a2.h0", tiny_model)
    with pytest.raises(ValueError, match="heads 0..3"):
        parse("a0.h4", tiny_model)
    with pytest.raises(ValueError, match="attention-only"):
        parse("m0", tiny_attn_only)


def test_component_lists_are_in_residual_order(tiny_model, tiny_attn_only):
    comps = all_components(tiny_model, include_embed=True)
    assert comps[0] == "embed" and comps[1:6] == ["a0.h0", "a0.h1", "a0.h2", "a0.h3", "m0"]
    assert len(all_heads(tiny_model)) == 8 and all_mlps(tiny_attn_only) == []
    assert sorted(reversed(comps), key=sort_key) == comps
    assert output_hook(parse("m1")) == "blocks.1.hook_mlp_out"
    with pytest.raises(ValueError):
        output_hook(parse("logits"))
    assert [str(c) for c in parse_many("m0")] == ["m0"]


def test_components_sort_in_residual_order_not_by_kind_name():
    """A plain sorted() of Components follows the residual stream (it used to order by the kind's name)."""
    from tutorial_lib.core.components import parse_many, sort_key

    names = ["m10", "a2.h0", "m2", "embed", "a10.h3", "logits", "a2.h1.q"]
    comps = parse_many(names)
    assert [str(c) for c in sorted(comps)] == sorted(names, key=sort_key)
    assert [str(c) for c in sorted(comps)] == ["embed", "a2.h0", "a2.h1.q", "m2", "a10.h3", "m10", "logits"]
    assert parse("a2.h0") < parse("m2") < parse("a10.h3") and max(comps) == parse("logits")
