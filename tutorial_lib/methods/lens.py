"""Reading what components carry: logit lens, PCA of an MLP input, a linear probe, top-k neurons.

These follow Hanna, Liu & Variengien (2023), who read the greater-than circuit's MLPs this way:

* :func:`logit_lens` -- project a component's output at END through the final LayerNorm scale onto
  some tokens (the 100 year tokens) and average by YY: ``[n_YY, n_tokens]``. The key MLPs show an
  upper-triangular pattern (they raise years above YY).
* :func:`mlp_input_pca` -- the residual stream entering an MLP, at END, projected on its first
  principal components and coloured by YY.
* :func:`linear_probe` / :func:`activations` -- ridge regression of YY from an activation, with a
  seeded train/test split; R² and accuracy within ±k years.
* :func:`topk_neuron_recovery` -- keep only the top-k neurons of an MLP clean (the rest take their
  corrupted values) and measure what fraction of the MLP's effect on the metric comes back.

>>> lens = logit_lens(model, task, "m10")          # doctest: +SKIP
>>> lens.values.shape, lens.plot()                  # doctest: +SKIP
(torch.Size([97, 100]), Figure(...))
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np
import torch
from jaxtyping import Float, Int
from torch import Tensor
from ..core.progress import tqdm

from ..core.components import parse
from ..core.forward import RunCache, check_supported, evaluate_runs, run_downstream, run_key, same_run
from ..tasks.base import task_positions


# ----------------------------------------------------------------------------------------- helpers
def _pos(task, position, what="position") -> Tensor:
    pos = task_positions(task, position)
    if pos is None:
        raise ValueError(f"{what} must name one position per example ('END', 'YY', ...) or be a [batch] tensor")
    return pos.long()


def _groups(task, groups) -> Tensor:
    if groups is None:
        groups = getattr(task, "yy", None)
    if groups is None:
        raise ValueError("pass groups= (one integer per example, e.g. YY); this task has no .yy")
    groups = torch.as_tensor(groups)
    if groups.shape != (len(task),):
        raise ValueError(f"groups must have one value per example ({len(task)}); got shape {tuple(groups.shape)}")
    return groups


def component_output(model, tokens: Int[Tensor, "batch pos"], component: str,
                     positions: Int[Tensor, "batch"]) -> Float[Tensor, "batch d_model"]:
    """What ``component`` (a head, an MLP or ``embed``) writes into the residual stream at ``positions``."""
    c = parse(component, model)
    if c.kind == "logits" or c.input:
        raise ValueError(f"{component!r} has no output; use a head, an MLP or 'embed'")
    name = {"head": f"blocks.{c.layer}.attn.hook_z", "mlp": f"blocks.{c.layer}.hook_mlp_out",
            "embed": "blocks.0.hook_resid_pre"}[c.kind]
    tokens = tokens.to(model.cfg.device)
    act = _outputs(model, tokens)[name][torch.arange(tokens.shape[0]), positions.to(tokens.device)]
    if c.kind == "head":
        act = act[:, c.head] @ model.blocks[c.layer].attn.W_O[c.head]
    return act


_OUTPUTS: list = []  # [(run_key, outputs)] of the last two token tensors component_output read


def _outputs(model, tokens) -> dict:
    """Every head's ``z``, every MLP's output and the embedding of one run of ``tokens`` (no unembedding): the
    run is made once and kept for the last two token tensors (a path-patching exercise reads every sender on the
    same clean and corrupted prompts), and made afresh once the weights change or while a hook is attached."""
    key = run_key(model, tokens)
    for k, outputs in _OUTPUTS:
        if same_run(k, key):
            return outputs
    keep = lambda n: n.endswith(("attn.hook_z", "hook_mlp_out")) or n == "blocks.0.hook_resid_pre"  # noqa: E731
    with torch.no_grad():
        _, cache = model.run_with_cache(tokens, names_filter=keep, stop_at_layer=model.cfg.n_layers)
    outputs = dict(cache.items())
    if key is not None:
        _OUTPUTS[:] = (_OUTPUTS + [(key, outputs)])[-2:]
    return outputs


def _final_ln_linear(model, tokens, positions):
    """ln_final as a linear map with its scale frozen at the clean run's value, per example.

    Returns ``(apply, adjoint)``: ``apply(x)[b] = w ⊙ centre(x[b]) / scale[b]`` (what ln_final does to
    one component of the residual stream) and ``adjoint(u)[b] = centre(w ⊙ u[b]) / scale[b]``, so that
    ``apply(x)[b] · u[b] == x[b] · adjoint(u)[b]``.
    """
    centre = model.cfg.normalization_type in ("LN", "LNPre")
    name = "ln_final.hook_scale"
    scale = None
    if name in model.hook_dict:
        with torch.no_grad():  # the final residual stream through ln_final alone: no unembedding
            resid = model(tokens, stop_at_layer=model.cfg.n_layers)
            rows = resid[torch.arange(tokens.shape[0]), positions]
            seen = {}
            with model.hooks(fwd_hooks=[(name, lambda act, hook: seen.setdefault("scale", act))]):
                model.ln_final(rows[:, None])
        scale = seen["scale"][:, 0, 0]
    w = getattr(model.ln_final, "w", None)

    def c(x):
        return x - x.mean(-1, keepdim=True) if centre else x

    def s(x):
        return x / scale[:, None] if scale is not None else x

    def apply(x):  # [batch, d_model]
        x = s(c(x))
        return x * w if w is not None else x

    def adjoint(u):  # [batch, d_model]
        return s(c(u * w if w is not None else u))

    return apply, adjoint


# ----------------------------------------------------------------------------------------- logit lens
@dataclass
class LensResult:
    """``values[i, j]``: mean logit contribution to token j for examples whose group is ``groups[i]``."""

    values: Tensor
    groups: list
    token_labels: list
    component: str
    per_example: Tensor = field(repr=False, default=None)

    def plot(self, title: Optional[str] = None):
        """Diverging heatmap, groups (YY) increasing upward as in the year-probability heatmap."""
        from ..viz.patching import plot_lens

        return plot_lens(self, title)

    def above_minus_below(self) -> float:
        """Mean contribution to the tokens *above* each row's group minus the mean at or below it: > 0 for the
        paper's upper-triangular pattern (tokens and groups both year numbers 0..99, as for greater-than)."""
        above = torch.arange(self.values.shape[1])[None, :] > torch.as_tensor(self.groups)[:, None]
        return float(self.values[above].mean() - self.values[~above].mean())

    def peak_offset(self) -> float:
        """Median over rows of (the token with the largest contribution) − (the row's group): how far above YY
        the component pushes hardest (1: just above YY, a band; large: far above, the triangle's far end)."""
        return float((self.values.argmax(1) - torch.as_tensor(self.groups)).float().median())


def logit_lens(model, task, component: str, token_ids: Optional[Sequence[int]] = None, groups=None,
               position="END", token_labels: Optional[Sequence[str]] = None) -> LensResult:
    """Project ``component``'s output at ``position`` onto ``token_ids`` and average by group.

    The output goes through the final LayerNorm with its scale frozen at the clean run's value (the
    component's share of the logits: centred, divided by the scale, times ``ln_final.w``, times
    ``W_U``; no biases). Defaults: ``token_ids = task.year_ids``, ``groups = task.yy``.

    Returns a :class:`LensResult` with ``values [n_groups, n_tokens]`` (groups sorted).
    """
    if token_ids is None:
        token_ids = getattr(task, "year_ids", None)
        if token_ids is None:
            raise ValueError("pass token_ids= (the tokens to read); this task has no .year_ids")
    token_ids = torch.as_tensor(token_ids).long()
    g = _groups(task, groups)
    pos = _pos(task, position)
    tokens = task.clean.to(model.cfg.device)
    out = component_output(model, tokens, component, pos)
    lin, _ = _final_ln_linear(model, tokens, pos.to(tokens.device))
    with torch.no_grad():
        logits = lin(out) @ model.W_U[:, token_ids.to(out.device)]  # [batch, n_tokens]
    keys = sorted(set(g.tolist()))
    values = torch.stack([logits[(g == k).to(logits.device)].mean(0) for k in keys]).cpu()
    labels = list(token_labels) if token_labels is not None else (
        [f"{i:02d}" for i in range(100)] if len(token_ids) == 100 else [str(int(t)) for t in token_ids])
    return LensResult(values, keys, labels, component, logits.cpu())


# ----------------------------------------------------------------------------------------- PCA and probe
def activations(model, tokens: Int[Tensor, "batch pos"], hook_name: str,
                positions: Int[Tensor, "batch"], head: Optional[int] = None) -> Float[Tensor, "batch d"]:
    """One activation per example: ``hook_name`` (e.g. ``"blocks.9.hook_resid_mid"``, the input of MLP 9)
    at ``positions[b]`` (and one head's slice for per-head hooks)."""
    tokens = tokens.to(model.cfg.device)
    if hook_name not in model.hook_dict:
        raise ValueError(f"unknown hook {hook_name!r}; e.g. 'blocks.9.hook_resid_mid', 'blocks.9.hook_mlp_out'")
    with torch.no_grad():
        _, cache = model.run_with_cache(tokens, names_filter=hook_name)
    act = cache[hook_name][torch.arange(tokens.shape[0]), positions.to(tokens.device)]
    return (act[:, head] if head is not None else act).cpu()


@dataclass
class PCAResult:
    coords: np.ndarray
    explained_variance_ratio: np.ndarray
    groups: np.ndarray
    title: str

    def plot(self):
        """The first two principal components, one dot per example, coloured by YY."""
        from ..viz.patching import plot_pca

        return plot_pca(self)


def mlp_input_pca(model, task, layer: int, position="END", groups=None, n_components: int = 2) -> PCAResult:
    """PCA of the residual stream entering MLP ``layer`` (``hook_resid_mid``) at ``position``, coloured by YY."""
    from sklearn.decomposition import PCA

    if n_components < 2:
        raise ValueError(f"n_components must be at least 2 to draw a scatter; got {n_components}")
    g = _groups(task, groups)
    acts = activations(model, task.clean, f"blocks.{layer}.hook_resid_mid", _pos(task, position))
    pca = PCA(n_components=n_components).fit(acts.numpy())
    return PCAResult(pca.transform(acts.numpy()), pca.explained_variance_ratio_, g.numpy(),
                     f"PCA of the input of MLP {layer} at {position}")


@dataclass
class ProbeResult:
    r2_train: float
    r2_test: float
    accuracy_within: dict
    predictions: np.ndarray
    targets: np.ndarray
    test_index: np.ndarray


def linear_probe(acts: Float[Tensor, "n d"], targets, test_fraction: float = 0.25, seed: int = 0,
                 alpha: float = 1.0, within: Sequence[int] = (0, 1, 2, 5)) -> ProbeResult:
    """Ridge regression of ``targets`` (e.g. YY) from ``acts``; seeded split; R² and ±k accuracy on test.

    ``accuracy_within[k]`` is the fraction of test examples whose rounded prediction is within k of
    the target.

    >>> acts = activations(model, task.clean, "blocks.9.hook_resid_mid", task.end_pos)   # doctest: +SKIP
    >>> linear_probe(acts, task.yy).r2_test                                             # doctest: +SKIP
    """
    from sklearn.linear_model import Ridge

    X = torch.as_tensor(acts).float().cpu().numpy()
    y = torch.as_tensor(targets).float().cpu().numpy()
    if X.ndim != 2 or len(X) != len(y):
        raise ValueError(f"acts must be [n, d] with one target each; got {X.shape} and {y.shape}")
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be between 0 and 1; got {test_fraction}")
    n_test = max(1, int(round(len(y) * test_fraction)))
    if n_test >= len(y) - 1:
        raise ValueError(f"too few examples ({len(y)}) for a train/test split")
    perm = np.random.default_rng(seed).permutation(len(y))
    test, train = perm[:n_test], perm[n_test:]
    reg = Ridge(alpha=alpha).fit(X[train], y[train])
    pred = reg.predict(X)
    err = np.abs(np.round(pred[test]) - y[test])
    return ProbeResult(float(reg.score(X[train], y[train])), float(reg.score(X[test], y[test])),
                       {k: float((err <= k).mean()) for k in within}, pred, y, test)


# ----------------------------------------------------------------------------------------- neurons
@dataclass
class NeuronResult:
    """``recovered[i]``: fraction of the MLP's effect kept with only the top ``ks[i]`` neurons clean."""

    ks: list
    recovered: list
    ranking: Tensor
    scores: Tensor
    layer: int
    full_effect: float
    rank_by: str

    def plot(self):
        """The fraction of the MLP's effect recovered against k (log scale)."""
        from ..viz.patching import plot_neuron_recovery

        return plot_neuron_recovery(self)


def _neuron_scores(model, task, layer, pos, post_c, post_k, metric, rank_by):
    W_out = model.blocks[layer].mlp.W_out  # [d_mlp, d_model]
    dpost = post_c - post_k  # [batch, d_mlp]: clean minus corrupted activation
    tokens = task.clean.to(model.cfg.device)
    if rank_by == "direct":  # contribution along the metric's logit-lens direction
        with torch.no_grad():
            logits = model(tokens)
        logits = logits.detach().requires_grad_(True)
        metric(logits).sum().backward()
        g = logits.grad[torch.arange(len(pos)), pos]  # [batch, d_vocab]: d metric / d final logits
        _, adjoint = _final_ln_linear(model, tokens, pos)
        with torch.no_grad():
            direction = adjoint(g @ model.W_U.T)  # [batch, d_model]: the metric's logit-lens direction
            return (dpost * (direction @ W_out.T)).mean(0)
    # exact: patch each neuron alone (clean -> corrupted) and recompute the later layers
    base = RunCache(model, tokens, pos)
    p0 = int(pos.min())
    mask = torch.zeros_like(tokens, dtype=torch.float)
    mask[torch.arange(len(pos)), pos] = 1.0
    B = tokens.shape[0]

    def final_fn(part, p0_):
        n = torch.tensor(part, device=tokens.device)
        delta = (-dpost[:, n].T)[:, :, None, None] * W_out[n][:, None, None, :]  # [c, B, 1, d]
        delta = delta * mask[None, :, p0_:, None]
        resid = base.resid_post[layer][None, :, p0_:] + delta
        return run_downstream(model, base, resid.reshape(-1, *resid.shape[2:]), layer + 1, p0_, len(part))

    vals = evaluate_runs(model, base, list(range(W_out.shape[0])), final_fn, p0, metric, pos, progress=True,
                         desc=f"neurons of m{layer}")
    return (base.metric(metric)[None] - vals).mean(1)  # metric drop when the neuron alone is corrupted


def topk_neuron_recovery(model, task, layer: int, ks: Sequence[int] = (1, 5, 10, 50, 100, 200),
                         rank_by: str = "direct", position="END", metric=None) -> NeuronResult:
    """How much of MLP ``layer``'s effect its top-k neurons carry.

    The MLP's effect is ``m_clean − m_none`` where ``m_none`` is the metric when every neuron of the
    MLP takes its corrupted activation at ``position``; keeping the top-k neurons clean gives
    ``m_k``; ``recovered = (m_k − m_none) / (m_clean − m_none)``.

    ``rank_by``: ``"direct"`` ranks neurons by |mean (clean − corrupted activation) × (W_out row ·
    the metric's logit-lens direction)| (one backward pass through the unembedding only);
    ``"patching"`` by |the metric change when that neuron alone is corrupted| (exact; one batched
    recomputation of the later layers per chunk of neurons).
    """
    if rank_by not in ("direct", "patching"):
        raise ValueError(f"unknown rank_by {rank_by!r}; accepted: 'direct', 'patching'")
    check_supported(model)
    if model.cfg.attn_only or not 0 <= layer < model.cfg.n_layers:
        raise ValueError(f"layer {layer} has no MLP in this model")
    metric = metric or task.metric
    pos = _pos(task, position).to(model.cfg.device)
    d_mlp = model.cfg.d_mlp
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 0 or ks[-1] > d_mlp:
        raise ValueError(f"ks must lie in 0..{d_mlp} (d_mlp); got {ks}")
    name = f"blocks.{layer}.mlp.hook_post"
    clean, corrupt = task.clean.to(model.cfg.device), task.corrupt.to(model.cfg.device)
    ar = torch.arange(len(pos), device=pos.device)
    with torch.no_grad():
        post_c = model.run_with_cache(clean, names_filter=name)[1][name][ar, pos]
        post_k = model.run_with_cache(corrupt, names_filter=name)[1][name][ar, pos]
    scores = _neuron_scores(model, task, layer, pos, post_c, post_k, metric, rank_by).detach()
    ranking = scores.abs().argsort(descending=True)

    def run_keeping(keep: Tensor) -> float:
        def hook(act, hook):
            act = act.clone()
            row = torch.where(keep[None], post_c, post_k)  # [batch, d_mlp]
            act[ar, pos] = row
            return act
        with torch.no_grad(), model.hooks(fwd_hooks=[(name, hook)]):
            return float(metric(model(clean)).mean())

    keep = torch.zeros(d_mlp, dtype=torch.bool, device=post_c.device)
    m_none = run_keeping(keep)
    m_full = run_keeping(~keep)
    gap = m_full - m_none
    recovered = []
    for k in tqdm(ks, desc="top-k neurons", leave=False):
        keep = torch.zeros(d_mlp, dtype=torch.bool, device=post_c.device)
        keep[ranking[:k]] = True
        recovered.append((run_keeping(keep) - m_none) / gap if abs(gap) > 1e-12 else float("nan"))
    return NeuronResult(ks, recovered, ranking.cpu(), scores.cpu(), layer, gap, rank_by)
