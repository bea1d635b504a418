"""Slow references for the spectral recipe and head ablation on the papers' families, built from TransformerLens'
hooks only (one forward per example, at most one kind of intervention in it); nothing here imports the course's
methods.

* :func:`query_rows` -- each query head's attention row and output ``z`` at one query position, rebuilt by hand
  from the hooked queries, keys and values: the queries and keys after QK-norm and rotary (``hook_rot_q`` /
  ``hook_rot_k``; ``hook_q`` / ``hook_k`` without rotary), the key/value group of query head ``h`` being
  ``h // (n_heads / n_kv)``, scores ``/ attn_scale``, the attention soft cap, the causal mask and the local window.
  The keyword switches reproduce tempting mistakes (the test suites plant them): ``pre_norm_qk`` (read
  ``hook_q`` / ``hook_k``, before QK-norm and rotary), ``group`` (another head -> group map), ``window=False``,
  ``cap=False``.
* :func:`pr` -- the participation ratio written out from the second-moment matrix's eigenvalues.
* :func:`ablated_logits` -- heads ablated through ``hook_result`` (each head's ``z_h @ W_O[h]``), the model
  recomputing every norm after it: zero, mean over a reference batch, or resampled rows.
"""
import math

import numpy as np
import torch


def query_rows(model, tokens, q: int, fwd_hooks=(), pre_norm_qk=False, group=None, window=True, cap=True):
    """``(z [n, L, H, d_head], pattern [n, L, H, pos])`` at query position ``q``, rebuilt from hooks."""
    cfg = model.cfg
    H = cfg.n_heads
    G = cfg.n_key_value_heads or H
    group = group or (lambda h: h // (H // G))
    rotary = cfg.positional_embedding_type == "rotary" and not pre_norm_qk
    qn, kn = ("hook_rot_q", "hook_rot_k") if rotary else ("hook_q", "hook_k")
    zs, ps = [], []
    for i in range(tokens.shape[0]):
        with torch.no_grad(), model.hooks(fwd_hooks=list(fwd_hooks)):
            _, cache = model.run_with_cache(tokens[i : i + 1], names_filter=lambda n: n.split(".")[-1] in (qn, kn, "hook_v"))
        z_l, p_l = [], []
        for l in range(cfg.n_layers):
            att = model.blocks[l].attn
            Q, K, V = (cache[f"blocks.{l}.attn.{n}"][0] for n in (qn, kn, "hook_v"))  # [pos, heads or groups, d]
            z_h, p_h = [], []
            for h in range(H):
                g = group(h)
                s = (K[: q + 1, g] @ Q[q, h]) / att.attn_scale
                c = cfg.attn_scores_soft_cap or -1.0
                if cap and c > 0:
                    s = c * torch.tanh(s / c)
                keys = torch.arange(q + 1)
                if window and att.attn_type == "local":
                    s = torch.where(keys > q - cfg.window_size, s, torch.tensor(float("-inf"), dtype=s.dtype))
                p = torch.zeros(tokens.shape[1], dtype=s.dtype)
                p[: q + 1] = torch.softmax(s, 0)
                p_h.append(p)
                z_h.append(p[: q + 1] @ V[: q + 1, g])
            z_l.append(torch.stack(z_h))
            p_l.append(torch.stack(p_h))
        zs.append(torch.stack(z_l))
        ps.append(torch.stack(p_l))
    return torch.stack(zs), torch.stack(ps)


def pr(X, definition="exp_entropy") -> float:
    """Participation ratio of ``X [n, d]`` (not centred) from the eigenvalues of ``X^T X / n``."""
    X = np.asarray(X, dtype=np.float64)
    lam = np.clip(np.linalg.eigvalsh(X.T @ X / X.shape[0]), 0, None)
    if definition == "order2":
        return lam.sum() ** 2 / (lam**2).sum()
    p = lam / lam.sum()
    return math.exp(-sum(pi * math.log(pi) for pi in p if pi > 0))


def _results(model, tokens):
    saved = model.cfg.use_attn_result
    model.set_use_attn_result(True)
    try:
        with torch.no_grad():
            _, cache = model.run_with_cache(tokens, names_filter=lambda n: n.endswith("hook_result"))
    finally:
        model.set_use_attn_result(saved)
    return cache


def ablated_logits(model, tokens, heads, mode="zero", reference=None, sources=None):
    """Logits with ``heads`` (``[(layer, head), ...]``) ablated at every position through ``hook_result``: set to
    0, to its mean over ``reference`` (per position), or to row ``sources[b]`` of ``reference``. One forward per
    example, the model recomputing its norms downstream."""
    ref = _results(model, reference) if mode != "zero" else None
    out = []
    saved = model.cfg.use_attn_result
    model.set_use_attn_result(True)
    try:
        for i in range(tokens.shape[0]):
            def hook(act, hook, i=i):
                l = int(hook.name.split(".")[1])
                act = act.clone()
                for L, h in heads:
                    if L != l:
                        continue
                    if mode == "zero":
                        act[:, :, h] = 0.0
                    elif mode == "mean":
                        act[:, :, h] = ref[hook.name][:, :, h].mean(0)
                    else:
                        act[:, :, h] = ref[hook.name][int(sources[i]), :, h]
                return act
            names = sorted({f"blocks.{l}.attn.hook_result" for l, _ in heads})
            with torch.no_grad(), model.hooks(fwd_hooks=[(n, hook) for n in names]):
                out.append(model(tokens[i : i + 1])[0])
    finally:
        model.set_use_attn_result(saved)
    return torch.stack(out)


def family_model(family: str):
    """The tiny float64 model of ``family`` the planted-bug tests share (weights ×3, seed 1). Gemma 2's attention soft
    cap (50) lies far above such a model's attention scores, where leaving it out changes nothing; it is set to 2,
    a cap the scores reach, so that a bug which drops it shows."""
    import torch

    from tutorial_lib.zoo.families import tiny_family_model

    model = tiny_family_model(family, dtype=torch.float64, scale=3.0, seed=1)
    if family == "gemma2":
        model.cfg.attn_scores_soft_cap = 2.0
    return model
