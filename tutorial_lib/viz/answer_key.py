"""Figures of notebook 05: the answer keys' attention patterns and weights, and the methods' ROC curves."""
from __future__ import annotations

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from .comparing import METHOD_COLOURS


def _colour(method: str) -> str:
    return METHOD_COLOURS.get(method, "#9467bd")


def plot_patterns(key, task, heads=None, row: int = 0) -> go.Figure:
    """Attention patterns (query x key) of ``heads`` (default: the circuit's heads) on prompt ``row``."""
    heads = heads or key.circuit.heads
    model = key.model
    names = {f"blocks.{h[1:].split('.h')[0]}.attn.hook_pattern" for h in heads}
    with torch.no_grad():
        _, cache = model.run_with_cache(task.clean[row:row + 1], names_filter=lambda n: n in names)
    labels = [f"{i}:{t}" for i, t in enumerate(task.prompts[row].split())]
    fig = make_subplots(1, len(heads), subplot_titles=[f"{h}: {key.roles.get(h, '')}" for h in heads],
                        horizontal_spacing=0.12)
    for i, h in enumerate(heads):
        layer, head = (int(x) for x in h[1:].split(".h"))
        pat = cache[f"blocks.{layer}.attn.hook_pattern"][0, head]
        fig.add_trace(go.Heatmap(z=pat.numpy(), x=labels, y=labels, zmin=0, zmax=1, colorscale="Blues",
                                 showscale=i == len(heads) - 1), 1, i + 1)
        fig.update_yaxes(autorange="reversed", title_text="query" if i == 0 else None, row=1, col=i + 1)
        fig.update_xaxes(title_text="key", row=1, col=i + 1)
    fig.update_layout(title=f"{key.name} key: attention of the circuit's heads on one prompt", height=430,
                      width=430 * len(heads) + 80)
    return fig


def plot_weight_circuits(key) -> go.Figure:
    """The weights that make each circuit head do its job, read through the residual layout.

    Induction key: the positional QK circuit of ``a0.h0`` (query position x key position: a shifted diagonal) and
    the K-composition circuit of ``a1.h0`` (current token x token *before* the key, through ``a0.h0``'s OV: a
    diagonal). Successor key: the QK circuit of ``a0.h0`` (query token x key token: the marker row lights up on the
    numbers) and the number -> logit map of ``a0.h0``'s OV followed by ``m1`` (a shifted diagonal: n -> n + 1)."""
    m, lay = key.model, key.layout
    a0, a1 = m.blocks[0].attn, m.blocks[1].attn
    if key.name == "induction":
        P, E = m.W_pos.detach(), m.W_E.detach()
        toks = key.vocab["task"]
        qk0 = (P @ a0.W_Q[0]) @ (P @ a0.W_K[0]).T
        ov0 = E @ a0.W_V[0] @ a0.W_O[0]  # token -> what a0.h0 writes
        kc = (E[toks] @ a1.W_Q[0]) @ (ov0[toks] @ a1.W_K[0]).T
        panels = [("a0.h0 QK: query position x key position", qk0, list(range(P.shape[0])), list(range(P.shape[0])),
                   "key position", "query position"),
                  ("a1.h0 QK through a0.h0's OV (K-composition)", kc, toks, toks, "token before the key",
                   "query token")]
    else:
        E = m.W_E.detach()
        nums, marker = key.vocab["numbers"], key.vocab["marker"][0]
        rows = nums[:3] + [marker] + key.vocab["fillers"][:3]
        qk = (E[rows] @ a0.W_Q[0]) @ (E @ a0.W_K[0]).T
        moved = E[nums] @ a0.W_V[0] @ a0.W_O[0]
        mlp = m.blocks[1].mlp
        out = torch.relu(moved @ mlp.W_in + mlp.b_in) @ mlp.W_out @ m.W_U
        kinds = ["number"] * 3 + ["marker"] + ["filler"] * 3
        panels = [("a0.h0 QK: query token x key token", qk, list(range(E.shape[0])),
                   [f"{r} ({k})" for r, k in zip(rows, kinds)], "key token (1-12 numbers)", "query token"),
                  ("a0.h0 OV then m1: number -> logits of the numbers", out[:, nums], nums, nums, "logit of",
                   "number at the mover's key")]
    fig = make_subplots(1, 2, subplot_titles=[p[0] for p in panels], horizontal_spacing=0.14)
    for i, (_, z, x, y, xt, yt) in enumerate(panels):
        fig.add_trace(go.Heatmap(z=z.detach().numpy(), x=[str(v) for v in x], y=[str(v) for v in y],
                                 colorscale="RdBu", zmid=0, showscale=i == 1), 1, i + 1)
        fig.update_yaxes(autorange="reversed", type="category", title_text=yt, row=1, col=i + 1)
        fig.update_xaxes(type="category", title_text=xt, row=1, col=i + 1)
    fig.update_layout(title=f"{key.name} key: the weights of the circuit (ids; noise of sd 0.02 on every weight)",
                      height=470, width=1050)
    return fig


def plot_roc(scores_by_key: dict, level: str = "edges") -> go.Figure:
    """One panel per answer key: every method's ROC curve (``level`` "edges" or "nodes"), the diagonal of chance,
    and the path-patching search's circuit as one point."""
    keys = list(scores_by_key)
    fig = make_subplots(1, len(keys), subplot_titles=[f"{k} key ({level})" for k in keys], horizontal_spacing=0.1)
    for i, k in enumerate(keys):
        sc = scores_by_key[k]
        rocs = sc.edge_roc if level == "edges" else sc.node_roc
        for name, r in rocs.items():
            fig.add_trace(go.Scatter(x=r.fpr, y=r.tpr, mode="lines", line=dict(color=_colour(name), shape="linear"),
                                     name=f"{name} (AUROC {r.auroc:.2f})", legendgroup=k,
                                     legendgrouptitle_text=f"{k} key" if name == next(iter(rocs)) else None),
                          1, i + 1)
        x, y = sc.pp_point[level]
        fig.add_trace(go.Scatter(x=[x], y=[y], mode="markers", marker=dict(symbol="star", size=14, color="black"),
                                 name=f"path-patching search's circuit ({k})", legendgroup=k), 1, i + 1)
        fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(color="#bbb", dash="dot"),
                                 showlegend=False), 1, i + 1)
        fig.update_xaxes(title_text="false-positive rate", range=[-0.02, 1.02], row=1, col=i + 1)
        fig.update_yaxes(title_text="true-positive rate" if i == 0 else None, range=[-0.02, 1.04], row=1, col=i + 1)
    fig.update_layout(title=f"Recovering the known circuit: ROC over {level} (ties enter together)", height=460,
                      width=1100, legend=dict(groupclick="toggleitem"))
    return fig
