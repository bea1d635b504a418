"""A small, general trainer for the zoo's transformers: AdamW, warmup + cosine, masked loss, checkpoints.

One function, :func:`train`, trains any model that maps tokens ``[batch, pos]`` to logits
``[batch, pos, d_vocab]`` (a TransformerLens ``HookedTransformer`` in this course) on batches that a
function you write produces. It keeps copies of the weights at chosen steps (by default log-spaced, as
the spectral recipe of Xu 2026 needs: many early checkpoints, few late ones), can call your functions at
those steps (to compute a head's participation ratio *while* the model trains), and returns the loss
history.

**The batch function.** ``batch_fn(step, generator) -> (tokens, loss_mask)``:

* ``tokens``: ``Int[Tensor, "batch pos"]``, the input sequence.
* ``loss_mask``: ``[batch, pos]`` of 0/1 (or bool), or float weights (the loss is then
  ``sum(w * ce) / sum(w)`` over the positions with ``w > 0``). **Convention: ``loss_mask[b, p] = 1`` means the
  prediction made AT position ``p`` — of the NEXT token ``tokens[b, p + 1]`` — counts in the loss.**
  The last column has no next token and is ignored. So for a prompt ``"3 + 4 = 7"`` tokenised as
  ``[BOS, 3, +, 4, =, 7]``, the mask that trains only the answer is ``[0, 0, 0, 0, 1, 0]`` (the ``=``
  position predicts ``7``). A batch function may also return ``tokens`` alone (every position counts).
* ``generator`` is a seeded ``torch.Generator`` owned by the trainer: draw all randomness from it and
  the whole run is reproducible.
* A batch may also be a **list of groups** ``[(tokens_1, mask_1), (tokens_2, mask_2), ...]`` whose
  sequence lengths differ (one group per task, say); a group ``(tokens, mask, vocab)`` computes its softmax
  over the token ids ``vocab`` only (a closed vocabulary). The loss is the mean over *all* selected positions
  of all groups — the same number as padding every group to the longest and stacking them, without
  computing the padding (the multi-task corpus uses this: 2x fewer tokens per step).

Example::

    >>> import torch
    >>> from transformer_lens import HookedTransformer, HookedTransformerConfig
    >>> from tutorial_lib.zoo.train import train
    >>> _ = torch.manual_seed(0)  # model initialisation is yours to seed
    >>> cfg = HookedTransformerConfig(n_layers=1, d_model=32, n_ctx=16, d_head=8, d_vocab=10,
    ...                               attn_only=True, act_fn=None)
    >>> model = HookedTransformer(cfg)
    >>> def batch_fn(step, g):          # learn to copy the previous token
    ...     x = torch.randint(0, 10, (32, 16), generator=g)
    ...     x[:, 1::2] = x[:, 0::2]
    ...     mask = torch.zeros_like(x); mask[:, 0::2] = 1   # even positions predict their copy
    ...     return x, mask
    >>> res = train(model, batch_fn, steps=200, lr=3e-3, progress=False)
    >>> res.losses[-1] < res.losses[0]
    True

Speed: the loop does one forward, one backward and one optimizer step per step; the loss history is
kept on the device and read back once at the end (the progress bar reads it every ``log_every``
steps). When the mask is sparse (answer-only training) and the model is a ``HookedTransformer``, only
the masked positions are unembedded, which saves most of the unembedding cost with a large vocabulary.
The trainer never changes ``torch.get_num_threads()`` unless you pass ``num_threads`` (then it restores
the old value when it returns).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence, Union

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor
from ..core.progress import tqdm


BatchFn = Callable[[int, torch.Generator], Union[Tensor, tuple, list]]
Callback = Callable[[int, torch.nn.Module, int], object]


# ---------------------------------------------------------------------------------------------- steps
def log_spaced_steps(total: int, n: int = 20) -> list[int]:
    """``n`` checkpoint steps from 0 to ``total``, spaced evenly in log(step), always with 0, 1 and ``total``.

    Step 0 means the initial weights (before any update); step ``s`` means after ``s`` updates.

    >>> log_spaced_steps(1000, 8)
    [0, 1, 3, 10, 32, 100, 316, 1000]
    >>> log_spaced_steps(5, 20)          # never more steps than exist
    [0, 1, 2, 3, 4, 5]
    """
    if not isinstance(total, int) or total < 1:
        raise ValueError(f"total must be a positive int (the number of training steps), got {total!r}")
    if not isinstance(n, int) or n < 3:
        raise ValueError(f"n must be an int >= 3 (steps 0, 1 and total are always included), got {n!r}")
    if total + 1 <= n:
        return list(range(total + 1))
    m = n - 1  # points in 1..total, ideally exp(linspace(0, log total, m)), made strictly increasing
    pts = [int(round(math.exp(math.log(total) * i / (m - 1)))) for i in range(m)]
    for i in range(1, m):  # push duplicates (early, where the grid is denser than the integers) up
        pts[i] = max(pts[i], pts[i - 1] + 1)
    for i in range(m - 1, -1, -1):  # and keep room below `total` for the points after them
        pts[i] = min(pts[i], total - (m - 1 - i))
    return [0] + pts


def _resolve_checkpoint_steps(spec, steps: int) -> list[int]:
    if spec is None:
        return []
    if isinstance(spec, str):
        if spec != "log":
            raise ValueError(f"checkpoint_steps must be None, 'log', an int or a list of steps; got {spec!r}")
        return log_spaced_steps(steps, 20)
    if isinstance(spec, int):
        return log_spaced_steps(steps, spec)
    out = sorted({int(s) for s in spec})
    if bad := [s for s in out if s < 0 or s > steps]:
        raise ValueError(f"checkpoint steps {bad} lie outside 0..{steps} (the number of training steps)")
    return out


# ---------------------------------------------------------------------------------------------- result
@dataclass
class TrainResult:
    """What :func:`train` returns.

    * ``losses[s]``: the training loss of the batch of update ``s + 1`` (so ``len(losses) == steps``).
    * ``checkpoints[step]``: a CPU copy of ``model.state_dict()`` after ``step`` updates.
    * ``tokens_seen[step]``: input tokens consumed up to that checkpoint (``batch * pos`` per step).
    * ``callback_outputs[step]``: what each callback returned at that step (a list, one per callback).
    * ``seconds``: wall time of the whole run; ``cpu_seconds``: CPU time of this process over the run
      (all threads; on a shared machine the fairer measure); ``callback_seconds``: the part of
      ``seconds`` spent in checkpoints and callbacks; ``steps``: the number of updates.
    """

    losses: list[float]
    checkpoint_steps: list[int]
    checkpoints: dict = field(default_factory=dict)
    tokens_seen: dict = field(default_factory=dict)
    callback_outputs: dict = field(default_factory=dict)
    lrs: list[float] = field(default_factory=list)
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    callback_seconds: float = 0.0
    steps: int = 0

    def load_into(self, model: torch.nn.Module, step: int) -> torch.nn.Module:
        """Load the checkpoint of ``step`` into ``model`` (in place) and return it."""
        if step not in self.checkpoints:
            raise ValueError(f"no checkpoint at step {step}; checkpoints exist at {sorted(self.checkpoints)}")
        model.load_state_dict(self.checkpoints[step])
        return model

    def smoothed_losses(self, window: int = 50) -> list[float]:
        """Running mean of the loss over ``window`` steps (for plots)."""
        t = torch.tensor(self.losses, dtype=torch.float64)
        c = torch.cat([torch.zeros(1, dtype=torch.float64), t.cumsum(0)])
        idx = torch.arange(1, len(t) + 1)
        lo = (idx - window).clamp(min=0)
        return ((c[idx] - c[lo]) / (idx - lo)).tolist()


def save_checkpoints(result: TrainResult, directory: str | Path, prefix: str = "step") -> list[Path]:
    """Write every checkpoint of ``result`` as ``{prefix}_{step:07d}.safetensors``; return the paths."""
    from safetensors.torch import save_file

    (directory := Path(directory)).mkdir(parents=True, exist_ok=True)
    paths = []
    for step, sd in sorted(result.checkpoints.items()):
        p = directory / f"{prefix}_{step:07d}.safetensors"
        save_file({k: v.contiguous() for k, v in sd.items()}, str(p),
                  metadata={"step": str(step), "tokens_seen": str(result.tokens_seen.get(step, -1))})
        paths.append(p)
    return paths


def load_checkpoint(model: torch.nn.Module, path: str | Path) -> torch.nn.Module:
    """Load a safetensors checkpoint written by :func:`save_checkpoints` into ``model`` (in place)."""
    from safetensors.torch import load_file

    model.load_state_dict(load_file(str(path), device=str(next(model.parameters()).device)))
    return model


from .fast import fast_forward, head_dropout_mask, supports_fast_forward  # noqa: E402,F401  (re-exported)


# ---------------------------------------------------------------------------------------------- loss
def masked_next_token_loss(
    model: torch.nn.Module,
    tokens: Int[Tensor, "batch pos"],
    loss_mask: Optional[Tensor] = None,
    fast: bool = False,
    vocab: Optional[Tensor] = None,
    head_keep: Optional[Callable] = None,
) -> Float[Tensor, ""]:
    """Mean cross-entropy of next-token predictions at the positions where ``loss_mask`` is 1.

    ``loss_mask[b, p] = 1`` counts the prediction at ``p`` of ``tokens[b, p+1]``; its last column is
    ignored. ``None`` counts every position. Raises ValueError if the mask selects nothing.
    ``fast=True`` computes the forward pass with :func:`fast_forward` (caller checks support).
    ``vocab``: token ids the softmax runs over (a closed vocabulary: the other logits are left out); every
    selected target must be one of them. ``head_keep``: head dropout in the fast forward (see :func:`fast_forward`).
    """
    if head_keep is not None and not fast:
        raise ValueError("head dropout (head_keep) needs the fast forward (fast=True)")
    run = (lambda t, **kw: fast_forward(model, t, head_keep=head_keep, **kw)) if fast else model
    if tokens.ndim != 2:
        raise ValueError(f"tokens must be [batch, pos], got shape {tuple(tokens.shape)}")
    targets = tokens[:, 1:]
    if loss_mask is None:
        logits = run(tokens)
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), targets.reshape(-1))
    if loss_mask.shape != tokens.shape:
        raise ValueError(
            f"loss_mask shape {tuple(loss_mask.shape)} must equal tokens shape {tuple(tokens.shape)} "
            "(mask[b, p] = 1 counts the prediction at p of the token at p + 1)"
        )
    weights = None
    if loss_mask.is_floating_point():  # weights: the loss is sum(w * ce) / sum(w) over positions with w > 0
        weights = loss_mask[:, :-1].to(tokens.device)
        if bool((weights < 0).any()) or not bool(torch.isfinite(weights).all()):
            raise ValueError("a float loss_mask holds weights, which must be finite and >= 0")
    sel = loss_mask[:, :-1].to(device=tokens.device) > 0 if weights is not None else \
        loss_mask[:, :-1].to(device=tokens.device, dtype=torch.bool)
    n_sel = int(sel.sum())
    if n_sel == 0:
        raise ValueError("loss_mask selects no position (its last column is ignored: no next token)")
    cfg = getattr(model, "cfg", None)
    if cfg is not None and hasattr(model, "unembed") and n_sel < 0.5 * sel.numel():
        # Unembed only the selected positions: run the blocks, then ln_final + unembed on a [1, N, d] slab.
        resid = run(tokens, stop_at_layer=cfg.n_layers)
        r = resid[:, :-1][sel][None]
        if hasattr(model, "ln_final"):
            r = model.ln_final(r)
        logits = model.unembed(r)[0]
        cap = getattr(cfg, "output_logits_soft_cap", -1.0) or -1.0
        if cap > 0:  # Gemma 2's logit soft cap, as the model's own forward applies it
            logits = cap * torch.tanh(logits / cap)
    else:
        logits = run(tokens)[:, :-1][sel]
    target = targets[sel]
    if vocab is not None:
        vocab = vocab.to(logits.device)
        index = torch.full((logits.shape[-1],), -1, dtype=torch.long, device=logits.device)
        index[vocab] = torch.arange(len(vocab), device=logits.device)
        target = index[target]
        if bool((target < 0).any()):
            raise ValueError("a selected target token is not in the closed vocabulary `vocab`")
        logits = logits[..., vocab]
    if weights is not None:
        w = weights[sel]
        return (F.cross_entropy(logits, target, reduction="none") * w).sum() / w.sum()
    return F.cross_entropy(logits, target)


def grouped_next_token_loss(model: torch.nn.Module, groups: Sequence[tuple], fast: bool = False,
                            head_keep: Union[Callable, list, None] = None) -> Float[Tensor, ""]:
    """Mean cross-entropy over every selected position of several ``(tokens, loss_mask)`` groups (``head_keep``:
    one for all, or a list with one per group).

    Equal to :func:`masked_next_token_loss` on the groups padded to one length and stacked (causal
    attention never looks at the padding after a row), but each group runs at its own length.
    """
    if not groups:
        raise ValueError("a grouped batch needs at least one (tokens, loss_mask) group")
    total, count = 0.0, 0
    for i, g in enumerate(groups):
        if not (isinstance(g, (tuple, list)) and len(g) in (2, 3)):
            raise ValueError(f"group {i} of the batch must be a (tokens, loss_mask) pair or a (tokens, loss_mask, "
                             f"vocab) triple, got {type(g).__name__}")
        tokens, mask = g[0], g[1]
        vocab = g[2] if len(g) == 3 else None
        n = float(mask[:, :-1].sum()) if mask.is_floating_point() else int(mask[:, :-1].bool().sum())
        if n == 0:
            continue
        hk = head_keep[i] if isinstance(head_keep, list) else head_keep
        total = total + masked_next_token_loss(model, tokens, mask, fast=fast, vocab=vocab, head_keep=hk) * n
        count += n
    if count == 0:
        raise ValueError("no group of the batch selects a position (each mask's last column is ignored)")
    return total / count


# ---------------------------------------------------------------------------------------------- train
def _lr_factor(step: int, steps: int, warmup: int, schedule: str, min_lr_frac: float) -> float:
    """LR multiplier for update number ``step`` (0-based)."""
    if warmup > 0 and step < warmup:
        return (step + 1) / warmup
    if schedule == "constant":
        return 1.0
    progress = (step - warmup) / max(1, steps - warmup)
    return min_lr_frac + (1 - min_lr_frac) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


def train(
    model: torch.nn.Module,
    batch_fn: BatchFn,
    steps: int,
    lr: float = 1e-3,
    seed: int = 0,
    loss_mask: bool = True,
    checkpoint_steps: Union[None, str, int, Sequence[int]] = None,
    callbacks: Iterable[Callback] = (),
    progress: bool = True,
    weight_decay: float = 0.01,
    warmup: Union[int, float] = 0.05,
    schedule: str = "cosine",
    min_lr_frac: float = 0.0,
    betas: tuple = (0.9, 0.98),
    grad_clip: Optional[float] = 1.0,
    save_dir: Optional[str | Path] = None,
    num_threads: Optional[int] = None,
    log_every: int = 25,
    desc: str = "training",
    fast: Optional[bool] = None,
    resume_dir: Optional[str | Path] = None,
    save_every: int = 0,
    resume: bool = False,
    head_dropout: float = 0.0,
    head_dropout_seed: int = 0,
    head_dropout_rows: Union[str, Callable] = "all",
) -> TrainResult:
    """Train ``model`` in place for ``steps`` AdamW updates on batches from ``batch_fn``.

    Args:
        model: maps ``tokens [batch, pos]`` to ``logits [batch, pos, d_vocab]``; trained in place.
        batch_fn: ``batch_fn(step, generator) -> (tokens, loss_mask)``, ``-> tokens`` or
            ``-> [(tokens, loss_mask), ...]`` (groups of different lengths); see the module docstring for
            the mask convention (``mask[b, p] = 1``: position p's prediction of token p+1 counts).
            ``step`` is the 0-based update number.
        steps: number of optimizer updates.
        lr: peak learning rate. ``schedule``: ``"cosine"`` (decay to ``min_lr_frac * lr``) or
            ``"constant"``; both after a linear ``warmup`` (an int number of steps, or a float fraction
            of ``steps``).
        seed: seeds the generator handed to ``batch_fn`` (and torch's global RNG for anything else in
            the step). Same seed and same initial weights → the same trained weights.
        loss_mask: if False, ignore the batch function's mask and train on every position.
        checkpoint_steps: None (no checkpoints), ``"log"`` (20 log-spaced steps incl. 0, 1 and
            ``steps``), an int ``n`` (``n`` log-spaced steps) or an explicit list of steps in
            ``0..steps``. Step 0 is the initial model.
        callbacks: each is called as ``callback(step, model, tokens_seen)`` at every checkpoint step,
            with the model in eval mode under ``torch.no_grad()``; return values are kept in
            ``result.callback_outputs[step]``.
        progress: show a ``tqdm.auto`` bar with the running loss.
        weight_decay: AdamW decay, applied to weight matrices only (not biases, LayerNorm or 1-D
            parameters).
        grad_clip: max global grad norm (None: no clipping).
        save_dir: if given, every checkpoint is also written there as safetensors.
        num_threads: if given, ``torch.set_num_threads(num_threads)`` for the run (restored after).
        fast: compute training forward passes with :func:`fast_forward` (same maths, no hook points).
            None (default): whenever :func:`supports_fast_forward` says it applies.
        resume_dir, save_every: every ``save_every`` steps (and when the run ends or is interrupted,
            e.g. by Ctrl-C) write the whole training state -- weights, optimizer, the batch generator's
            and torch's RNG states, the loss history, the checkpoints so far -- to
            ``resume_dir/train_state.pt``.
        resume: continue from ``resume_dir/train_state.pt`` if it exists (same arguments otherwise).
            On one thread, a resumed run ends with the same weights, bit for bit, as one never stopped.
        head_dropout: the probability with which each head of each row is zero-ablated in a training forward pass
            (drawn per step, layer and row from a generator seeded with ``head_dropout_seed``; 0: none). It makes
            the model rely less on any one head (issue 30: IOI on the medium model ran through a few heads). Needs
            the fast forward. ``head_dropout_rows``: ``"all"``, or a function of a group, True where dropout applies
            (:func:`tutorial_lib.zoo.multitask.dropout_rows`: the task rows only, or some tasks' rows).

    Returns:
        :class:`TrainResult` with the loss history, checkpoints and callback outputs.
    """
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive int, got {steps!r}")
    if lr <= 0:
        raise ValueError(f"lr must be > 0, got {lr!r}")
    if schedule not in ("cosine", "constant"):
        raise ValueError(f"schedule must be 'cosine' or 'constant', got {schedule!r}")
    warmup_steps = int(round(warmup * steps)) if isinstance(warmup, float) else int(warmup)
    if warmup_steps < 0 or warmup_steps > steps:
        raise ValueError(f"warmup must lie in 0..steps (or a fraction in [0, 1]), got {warmup!r}")
    ckpt = set(_resolve_checkpoint_steps(checkpoint_steps, steps))
    callbacks = list(callbacks)
    if fast is None:
        fast = supports_fast_forward(model)
    elif fast and not supports_fast_forward(model):
        raise ValueError("fast=True but this model's config is not supported by fast_forward; use fast=None")
    if not 0.0 <= float(head_dropout) < 1.0:
        raise ValueError(f"head_dropout is the probability of zeroing a head, in [0, 1); got {head_dropout!r}")
    if not (callable(head_dropout_rows) or head_dropout_rows == "all"):
        raise ValueError(f"head_dropout_rows is 'all' or a function of a group (True: drop), got {head_dropout_rows!r}")
    if head_dropout and not fast:
        raise ValueError("head_dropout needs the fast forward, which this model or fast=False rules out")

    old_threads = torch.get_num_threads()
    if num_threads is not None:
        torch.set_num_threads(num_threads)
    try:
        torch.manual_seed(seed)
        gen = torch.Generator().manual_seed(seed)
        drop_gen = torch.Generator().manual_seed(head_dropout_seed)  # head dropout's own draws (resumed with the run)
        device = next(model.parameters()).device
        head_keep = head_dropout_mask(head_dropout, drop_gen, device) if head_dropout else None
        decay = [p for p in model.parameters() if p.requires_grad and p.ndim >= 2]
        no_decay = [p for p in model.parameters() if p.requires_grad and p.ndim < 2]
        opt = torch.optim.AdamW(
            [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=lr, betas=betas,
        )
        result = TrainResult(losses=[], checkpoint_steps=sorted(ckpt), steps=steps)
        loss_hist = torch.zeros(steps, device=device)
        tokens_seen = 0
        t0, c0 = time.perf_counter(), time.process_time()

        def at_checkpoint(step: int) -> None:
            tc = time.perf_counter()
            result.checkpoints[step] = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
            result.tokens_seen[step] = tokens_seen
            if callbacks:
                was_training = model.training
                model.eval()
                with torch.no_grad():
                    result.callback_outputs[step] = [cb(step, model, tokens_seen) for cb in callbacks]
                model.train(was_training)
            result.callback_seconds += time.perf_counter() - tc

        state_path = Path(resume_dir) / "train_state.pt" if resume_dir is not None else None
        if (resume or save_every) and state_path is None:
            raise ValueError("resume and save_every need resume_dir (the folder for train_state.pt)")
        start, elapsed0 = 0, 0.0

        def save_state(next_step: int) -> None:
            state_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = state_path.with_suffix(".tmp")
            torch.save({"step": next_step, "steps": steps, "model": model.state_dict(), "opt": opt.state_dict(),
                        "gen": gen.get_state(), "drop_gen": drop_gen.get_state(), "rng": torch.get_rng_state(),
                        "loss_hist": loss_hist.cpu(),
                        "lrs": result.lrs, "tokens_seen_total": tokens_seen, "checkpoints": result.checkpoints,
                        "tokens_seen": result.tokens_seen, "callback_outputs": result.callback_outputs,
                        "elapsed": elapsed0 + time.perf_counter() - t0}, tmp)
            tmp.replace(state_path)  # atomic: a stop while writing leaves the previous state intact

        if resume and state_path.exists():
            st = torch.load(state_path, map_location=device, weights_only=False)
            if st["steps"] != steps:
                raise ValueError(f"{state_path} is a run of {st['steps']} steps, not {steps}; "
                                 "resume with the same arguments, or delete it to start afresh")
            model.load_state_dict(st["model"])
            opt.load_state_dict(st["opt"])
            gen.set_state(st["gen"])
            drop_gen.set_state(st.get("drop_gen", drop_gen.get_state()))
            torch.set_rng_state(st["rng"])
            loss_hist[:] = st["loss_hist"].to(device)
            result.lrs, tokens_seen, start = list(st["lrs"]), st["tokens_seen_total"], st["step"]
            result.checkpoints, result.tokens_seen = st["checkpoints"], st["tokens_seen"]
            result.callback_outputs, elapsed0 = st["callback_outputs"], st["elapsed"]
            if progress:
                print(f"[train] resuming {desc} at step {start} of {steps} from {state_path}")

        model.train()
        if 0 in ckpt and start == 0:
            at_checkpoint(0)
        bar = tqdm(range(start, steps), desc=desc, disable=not progress, mininterval=0.5,
                   initial=start, total=steps)
        step = start
        try:
            for step in bar:
                out = batch_fn(step, gen)
                f = _lr_factor(step, steps, warmup_steps, schedule, min_lr_frac)
                for g in opt.param_groups:
                    g["lr"] = lr * f
                if isinstance(out, list) and out and isinstance(out[0], (tuple, list)):  # groups of different lengths
                    groups = [(g[0].to(device), g[1] if loss_mask else torch.ones_like(g[0]), *g[2:]) for g in out]
                    keep = head_keep if head_dropout_rows == "all" else [
                        head_keep if head_dropout_rows(g) else None for g in out]
                    loss = grouped_next_token_loss(model, groups, fast=fast, head_keep=keep)
                    n_tokens = sum(g[0].numel() for g in groups)
                else:
                    tokens, mask = (out if isinstance(out, (tuple, list)) else (out, None))
                    tokens = tokens.to(device)
                    if not loss_mask:
                        mask = None
                    loss = masked_next_token_loss(model, tokens, mask, fast=fast, head_keep=head_keep)
                    n_tokens = tokens.numel()
                opt.zero_grad(set_to_none=True)
                loss.backward()
                if grad_clip is not None:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
                opt.step()
                loss_hist[step] = loss.detach()
                result.lrs.append(lr * f)
                tokens_seen += n_tokens
                if progress and (step % log_every == 0 or step == steps - 1):
                    lo = max(0, step - log_every + 1)
                    bar.set_postfix(loss=f"{loss_hist[lo:step + 1].mean().item():.3f}")
                if step + 1 in ckpt:
                    at_checkpoint(step + 1)
                if save_every and (step + 1) % save_every == 0 and step + 1 < steps:
                    save_state(step + 1)
        finally:  # an interrupted run resumes from the last periodic save (a step cut short is redone)
            bar.close()
        if save_every:
            save_state(steps)
        result.losses = loss_hist.cpu().tolist()
        result.seconds = elapsed0 + time.perf_counter() - t0
        result.cpu_seconds = time.process_time() - c0
        if save_dir is not None and result.checkpoints:
            save_checkpoints(result, save_dir)
        return result
    finally:
        if num_threads is not None:
            torch.set_num_threads(old_threads)
