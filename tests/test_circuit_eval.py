"""Circuit sufficiency and necessity, against a reference that picks, per component and position, the
clean-run recomputation or the corrupted value."""
import warnings

import pytest
import torch

warnings.filterwarnings("ignore", category=DeprecationWarning)
torch.set_num_threads(1)

from toy_patching import B, N_HEADS as H, N_LAYERS as L, P, model, task  # noqa: E402, F401 (fixtures)

from tutorial_lib.circuit_eval import circuit_necessity, circuit_sufficiency  # noqa: E402
from tutorial_lib.circuits import Circuit  # noqa: E402
from tutorial_lib.components import all_components  # noqa: E402
from tutorial_lib.hooks import assert_no_hooks  # noqa: E402


def ref_circuit(model, task, keep: dict, necessity: bool):
    """Reference: per component and position, pick clean-run recomputation or the corrupted value."""
    with torch.no_grad():
        _, cc = model.run_with_cache(task.corrupt)
    hooks = []
    for l in range(L):
        def hz(act, hook, l=l):
            act = act.clone()
            for b in range(B):
                for p in range(P):
                    for h in range(H):
                        inside = keep.get(f"a{l}.h{h}", lambda b, p: False)(b, p)
                        if inside == necessity:
                            act[b, p, h] = cc[hook.name][b, p, h]
            return act

        def hm(act, hook, l=l):
            act = act.clone()
            for b in range(B):
                for p in range(P):
                    if keep.get(f"m{l}", lambda b, p: False)(b, p) == necessity:
                        act[b, p] = cc[hook.name][b, p]
            return act
        hooks += [(f"blocks.{l}.attn.hook_z", hz), (f"blocks.{l}.hook_mlp_out", hm)]

    def he(act, hook):
        act = act.clone()
        for b in range(B):
            for p in range(P):
                if keep.get("embed", lambda b, p: False)(b, p) == necessity:
                    act[b, p] = cc[hook.name][b, p]
        return act
    hooks.append(("hook_embed", he))
    with torch.no_grad(), model.hooks(fwd_hooks=hooks):
        return task.metric(model(task.clean))


def test_circuit_sufficiency_and_necessity_match_reference(model, task):
    end, yy = task.end_pos, task.positions["YY"]
    circ = Circuit(["a1.h2", "a2.h0", "m2", "m0", "a0.h3", "embed"], name="toy")
    positions = {"a1.h2": "END", "a2.h0": "END", "m2": "END", "m0": "YY", "a0.h3": "YY", "embed": "YY"}
    at = {"END": lambda b, p: p == int(end[b]), "YY": lambda b, p: p == int(yy[b])}
    keep = {c: at[w] for c, w in positions.items()}
    suff = circuit_sufficiency(model, task, circ, positions)
    nec = circuit_necessity(model, task, circ, positions)
    assert torch.allclose(suff.per_example, ref_circuit(model, task, keep, False), atol=1e-4)
    assert torch.allclose(nec.per_example, ref_circuit(model, task, keep, True), atol=1e-4)
    assert abs(suff.fraction_of_clean - suff.value / suff.clean) < 1e-9
    assert abs(nec.normalized - (nec.value - nec.corrupt) / (nec.clean - nec.corrupt)) < 1e-9
    # the same circuit with its positions in meta gives the same numbers
    meta = Circuit(circ.nodes, name="toy", meta={"positions": positions})
    assert torch.allclose(circuit_sufficiency(model, task, meta).per_example, suff.per_example)
    assert_no_hooks(model)


def test_whole_and_empty_circuits_are_the_two_runs(model, task):
    with torch.no_grad():
        clean = task.metric(model(task.clean))
        corrupt = task.metric(model(task.corrupt))
    assert (clean - corrupt).abs().max() > 0.05
    everything = Circuit(all_components(model, include_embed=True), name="all")
    nothing = Circuit([], name="none")
    assert torch.allclose(circuit_sufficiency(model, task, everything).per_example, clean, atol=1e-5)
    assert torch.allclose(circuit_sufficiency(model, task, nothing).per_example, corrupt, atol=1e-5)
    assert torch.allclose(circuit_necessity(model, task, everything).per_example, corrupt, atol=1e-5)
    assert torch.allclose(circuit_necessity(model, task, nothing).per_example, clean, atol=1e-5)
    ev = circuit_sufficiency(model, task, everything)
    assert abs(ev.fraction_of_clean - 1) < 1e-5 and abs(ev.normalized - 1) < 1e-4
    assert "sufficiency of all" in str(ev)


def test_circuit_bad_input(model, task):
    with pytest.raises(ValueError, match="not in the circuit"):
        circuit_sufficiency(model, task, Circuit(["m0"]), {"m1": "END"})
    with pytest.raises(ValueError, match="unknown position"):
        circuit_sufficiency(model, task, Circuit(["m0"]), {"m0": "XX"})
    with pytest.raises(ValueError, match="does not exist"):
        circuit_necessity(model, task, Circuit(["a9.h0"]))
    with pytest.raises(ValueError, match="Circuit"):
        circuit_necessity(model, task, ["m0"])
