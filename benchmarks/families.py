"""The engines on Llama-3.2-1B- and Gemma-2-2B-shaped models: fast engine against the naive loop, in one process.

Models: TransformerLens' own conversion of each family's real configuration
(:func:`tutorial_lib.zoo.families.family_config` with ``shrink=False``): Llama 3.2 1B (d_model 2048, 32 query heads
of 64, 8 key/value heads, gated SiLU MLP of 8192, RMSNorm, rotary, vocabulary 128,256) and Gemma 2 2B (d_model 2304,
8 query heads of 256, 4 key/value heads, gated GELU MLP of 9216, sandwich norms, attention and logit soft caps,
local/global layers, vocabulary 256,000), with only the first ``--layers`` layers (default 2), random weights
(every weight matrix x ``--scale``, so that effects stand well above float32 noise), float32. Task: ``--n`` prompts
of ``--pos`` random tokens, one token corrupted, metric log p(answer) at the last position.

Three engines, each against the naive one-forward-per-intervention loop (the tests' independent references,
TransformerLens hooks only):

* **EAP** -- ``attribution.eap_scores`` (all examples in one batch) against ``reference_family_edges``
  (``tests/test_attribution.py``): per example two cached runs, a clean forward + backward with full logits, and the
  edge scores summed edge by edge in Python;
* **path patching** -- ``path_patching.path_patch_sweep``: every head and MLP a sender at END, into the logits;
  against ``reference_path_patch`` (``tests/path_reference.py``): one full hooked forward per sender (two for the
  independent receivers mode), full logits; the loop runs ``--naive-senders`` senders spread over the layers and its
  time is scaled up to all senders (each costs it the same two forwards);
* **faithfulness curve** -- ``faithfulness.patched_metric`` on the top-k edges of one random ranking at
  ``--fractions`` against ``reference_patched_metric`` (``tests/faithfulness_reference.py``): one hooked forward
  per circuit, every receiver's input rebuilt edge by edge. If the library refuses a grouped-query model, both run
  with ``cfg.ungroup_grouped_query_attention = True`` set by this script (printed).

Each family runs in its own subprocess (the model is built once there). Before every timed call the process runs
``gc.collect()`` and ``malloc_trim(0)``, reads its resident set size, and resets its peak (``/proc/self/clear_refs``);
after the call it reads the peak (``VmHWM``). Memory is reported as that peak (model included) and the part the
call added above the resident size before it. Times are medians of ``--repeats`` calls (naive: ``--naive-repeats``),
after one untimed warm-up call of each fast engine on two prompts. The fast engines are then timed again on the first layer alone (blocks
cut), and ``t(L) = a L + b L^2`` through the two depths gives the full-depth estimate.

    OMP_NUM_THREADS=1 python benchmarks/families.py              # both families, 2 layers (~15 min on the busy 2-core machine)
    OMP_NUM_THREADS=1 python benchmarks/families.py --quick      # tiny shapes: a smoke test (seconds)

The last line per family is ``RESULT families <family> eap=<x> path=<y> faith=<z>`` (wall-time ratios).
"""
from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the real models' depths (Llama-3.2-1B: 16 layers, Gemma-2-2B: 26)
FULL_LAYERS = {"llama": 16, "gemma2": 26}
NAMES = {"llama": "Llama-3.2-1B", "gemma2": "Gemma-2-2B"}


# ----------------------------------------------------------------------------------------- memory helpers
def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _settle() -> int:
    """Free what can be freed; return the resident size (kB) and reset the peak to it."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass
    rss = _status_kb("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")
    return rss


def measure(fn, repeats: int):
    """``(result, [wall s], [cpu s], peak MB, added MB)`` over ``repeats`` calls (memory: max over calls)."""
    walls, cpus, peak, added, out = [], [], 0.0, 0.0, None
    for _ in range(repeats):
        out = None
        rss = _settle()
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
        hwm = _status_kb("VmHWM")
        peak, added = max(peak, hwm / 1024), max(added, (hwm - rss) / 1024)
    return out, walls, cpus, peak, added


# ----------------------------------------------------------------------------------------- model and task
def build(family: str, layers: int, d_vocab, scale: float, quick: bool, seed: int = 0):
    import torch
    from transformer_lens import HookedTransformer, HookedTransformerConfig

    from tutorial_lib.zoo.families import family_config, tiny_family_model

    if quick:
        return tiny_family_model(family, seed=seed, scale=scale, n_layers=layers)
    size = {"n_layers": layers} | ({"d_vocab": d_vocab} if d_vocab else {})
    d = family_config(family, shrink=False, **size)
    d.update(seed=seed, device="cpu", dtype=torch.float32)
    model = HookedTransformer(HookedTransformerConfig(**d))
    with torch.no_grad():  # as tiny_family_model: weight matrices only, norms' scales and biases as built
        for name, p in model.named_parameters():
            if "w" in name.split(".")[-1].lower():
                p.mul_(scale)
    return model.eval()


def random_task(n: int, pos: int, vocab: int, seed: int = 0):
    import torch

    from tutorial_lib.tasks.base import TaskData

    g = torch.Generator().manual_seed(seed)
    clean = torch.randint(0, vocab, (n, pos), generator=g)
    corrupt = clean.clone()
    where = pos // 3  # one corrupted token, the same position in every prompt
    corrupt[:, where] = (clean[:, where] + torch.randint(1, vocab, (n,), generator=g)) % vocab
    return TaskData("random", [""] * n, [""] * n, clean, corrupt, end_pos=torch.full((n,), pos - 1),
                    answers=torch.randint(0, vocab, (n,), generator=g),
                    wrong=torch.randint(0, vocab, (n, 1), generator=g))


# ----------------------------------------------------------------------------------------- the engines
def eap_pair(model, task):
    import torch

    from test_attribution import reference_family_edges  # the tests' independent per-example reference

    from tutorial_lib.methods.attribution import eap_scores

    def fast():
        return eap_scores(model, task, batch_size=len(task), progress=False).edges

    def naive():
        from tutorial_lib.methods.attribution import EAPGraph

        g = EAPGraph.from_model(model)
        out = torch.zeros(len(task), len(g.senders), len(g.receivers))
        for i in range(len(task)):
            table, _, _ = reference_family_edges(model, task, i)
            for (s, r), v in table.items():
                out[i, g.senders.index(s), g.receivers.index(r)] = v
        return out

    def compare(a, b):
        return float((a - b).abs().max()), float(b.abs().max())

    return fast, naive, compare, "edge scores", 1.0


def path_pair(model, task, naive_senders: int):
    import torch

    import path_reference
    from tutorial_lib.methods.path_patching import path_patch_sweep

    cfg = model.cfg
    senders = [f"a{l}.h{h}" for l in range(cfg.n_layers) for h in range(cfg.n_heads)]
    senders += [f"m{l}" for l in range(cfg.n_layers)]
    from tutorial_lib.core.components import parse

    senders.sort(key=lambda n: parse(n).order)
    k = min(naive_senders, len(senders))  # every sender costs the loop the same (a full forward or two)
    subset = [senders[round(i * (len(senders) - 1) / max(k - 1, 1))] for i in range(k)]
    rows = [senders.index(x) for x in subset]
    def metric(logits):
        return task.answer_logprob(logits)

    def fast():
        r = path_patch_sweep(model, task.clean, task.corrupt, "logits", metric, senders=senders,
                             sender_positions=task.end_pos, logit_positions=task.end_pos, progress=False)
        return torch.stack([r.per_example[s] for s in senders])

    def naive():
        path_reference._RUNS.clear()  # its two plain runs are part of the loop's cost
        return torch.stack([path_reference.reference_path_patch(model, task.clean, task.corrupt, [s], ["logits"], metric,
                                                                sender_pos=task.end_pos, receivers_mode="independent")
                            for s in subset])

    def compare(a, b):
        base = metric(_logits(model, task.clean))
        return float((a[rows] - b).abs().max()), float((b - base).abs().max())  # effects' size

    return fast, naive, compare, f"{len(senders)} senders (naive: {k}, time x{len(senders) / k:.2f})", len(senders) / k


def _logits(model, tokens):
    import torch

    with torch.no_grad():
        return model(tokens)


def faith_pair(model, task, fractions, notes):
    import torch

    from faithfulness_reference import reference_patched_metric
    from tutorial_lib.methods import faithfulness as fa
    from tutorial_lib.methods.attribution import EAPGraph

    g = EAPGraph.from_model(model)
    masks = fa.top_edges(g, fa.random_scores(g, 0), fractions)
    cfg = model.cfg
    if cfg.n_key_value_heads is not None:
        try:
            fa.patched_metric(model, task.subset(slice(0, 2)), masks[:2], metric="answer_logprob")
        except Exception as e:  # noqa: BLE001 -- the library does not run grouped-query attention yet
            notes.append(f"faithfulness.patched_metric failed on the grouped model ({type(e).__name__}: "
                         f"{str(e)[:120]}); both sides run with cfg.ungroup_grouped_query_attention=True")
            cfg.ungroup_grouped_query_attention = True

    def fast():
        return fa.patched_metric(model, task, masks, metric="answer_logprob")

    def naive():
        saved = cfg.ungroup_grouped_query_attention
        cfg.ungroup_grouped_query_attention = cfg.n_key_value_heads is not None  # the reference needs split k/v per query head
        try:
            return torch.tensor([reference_patched_metric(model, task, m, metric=task.answer_logprob) for m in masks])
        finally:
            cfg.ungroup_grouped_query_attention = saved

    def compare(a, b):
        return float((a - b).abs().max()), float(b.max() - b.min())  # the curve's range

    return fast, naive, compare, f"{len(masks)} circuits of {fa.n_edges(g):,} edges", 1.0


# ----------------------------------------------------------------------------------------- one family (child)
def child(a) -> None:
    warnings.filterwarnings("ignore")
    for p in (str(ROOT), str(ROOT / "tests")):
        sys.path.insert(0, p)
    import torch

    torch.set_num_threads(a.threads)
    t0 = time.perf_counter()
    model = build(a.family, a.layers, a.d_vocab, a.scale, a.quick)
    cfg = model.cfg
    built = time.perf_counter() - t0
    task = random_task(a.n, a.pos, cfg.d_vocab, seed=1)
    notes: list[str] = []
    info = dict(family=a.family, layers=cfg.n_layers, d_model=cfg.d_model, n_heads=cfg.n_heads,
                n_kv=cfg.n_key_value_heads, d_head=cfg.d_head, d_mlp=cfg.d_mlp, d_vocab=cfg.d_vocab,
                threads=torch.get_num_threads(), build_s=built, model_mb=_settle() / 1024, n=a.n, pos=a.pos,
                torch=torch.__version__, notes=notes, rows=[])
    print(f"[{a.family}] built in {built:.1f} s: {cfg.n_layers} layers, d_model {cfg.d_model}, heads "
          f"{cfg.n_heads}/{cfg.n_key_value_heads}, d_mlp {cfg.d_mlp}, vocab {cfg.d_vocab}; "
          f"RSS {info['model_mb']:.0f} MB; {torch.get_num_threads()} thread(s)", file=sys.stderr, flush=True)
    pairs = {"eap": lambda: eap_pair(model, task), "path": lambda: path_pair(model, task, a.naive_senders),
             "faith": lambda: faith_pair(model, task, a.fractions, notes)}
    for engine in a.engines:
        fast, naive, compare, what, x_naive = pairs[engine]()
        # untimed warm-up (allocator, first-call overheads): the fast engine on 2 prompts, one plain forward
        _swap_task(task, task.subset(slice(0, 2)), fast)
        _logits(model, task.clean[:2])
        got, fw, fc, fpeak, fadd = measure(fast, a.repeats)
        ref, nw, nc, npeak, nadd = measure(naive, a.naive_repeats)
        diff, size = compare(got, ref)
        row = dict(engine=engine, what=what, fast_wall=fw, fast_cpu=fc, naive_wall=[w * x_naive for w in nw],
                   naive_cpu=[c * x_naive for c in nc], fast_peak_mb=fpeak, fast_added_mb=fadd, naive_peak_mb=npeak,
                   naive_added_mb=nadd, max_abs_diff=diff, size=size)
        info["rows"].append(row)
        print(f"[{a.family}] {engine}: fast {statistics.median(fw):.2f} s, naive {statistics.median(row['naive_wall']):.2f} s, "
              f"max|diff| {diff:.2e} (size {size:.3g})", file=sys.stderr, flush=True)
        del got, ref, fast, naive
    if cfg.n_layers > 1 and not a.no_depth_fit:
        # the fast engines again on the first layer alone (the same weights): t(L) = alpha L + beta L^2 through
        # t(1) and t(L) gives the full-depth estimate
        _truncate(model, 1)
        pairs1 = {"eap": lambda: eap_pair(model, task), "path": lambda: path_pair(model, task, 1),
                  "faith": lambda: faith_pair(model, task, a.fractions, [])}
        for row in info["rows"]:
            fast = pairs1[row["engine"]]()[0]
            _swap_task(task, task.subset(slice(0, 2)), fast)
            _, w1, c1, _, _ = measure(fast, a.repeats)
            row["fast_wall_1"], row["fast_cpu_1"] = w1, c1
            print(f"[{a.family}] {row['engine']} on 1 layer: fast {statistics.median(w1):.2f} s", file=sys.stderr, flush=True)
    print("JSON " + json.dumps(info))


def _truncate(model, n_layers: int) -> None:
    """Keep the first ``n_layers`` blocks (TransformerLens loops over ``model.blocks``; hooks re-registered)."""
    import torch

    model.blocks = torch.nn.ModuleList(list(model.blocks)[:n_layers])
    model.cfg.n_layers = n_layers
    model.setup()


def _swap_task(task, small, fn):
    """Run ``fn`` with ``task``'s fields temporarily those of ``small`` (the engines close over ``task``)."""
    keep = dict(vars(task))
    vars(task).update(vars(small))
    try:
        fn()
    finally:
        vars(task).clear()
        vars(task).update(keep)


# ----------------------------------------------------------------------------------------- report (parent)
def fit_full(t1: float, tL: float, L: int, full: int) -> float:
    """``alpha * full + beta * full^2`` through ``t(1) = t1`` and ``t(L) = tL`` (alpha, beta >= 0)."""
    beta = max((tL - L * t1) / (L * L - L), 0.0)
    alpha = max(t1 - beta, 0.0)
    return alpha * full + beta * full * full


def report(info: dict) -> str:
    fam, L = info["family"], info["layers"]
    full = FULL_LAYERS[fam]
    med = statistics.median
    lines = [f"**{NAMES[fam]}-shaped**: {L} of its {full} layers, d_model {info['d_model']}, {info['n_heads']} query / "
             f"{info['n_kv']} key-value heads of {info['d_head']}, d_mlp {info['d_mlp']}, vocabulary "
             f"{info['d_vocab']:,}; {info['n']} prompts x {info['pos']} tokens; built in {info['build_s']:.0f} s, "
             f"{info['model_mb']:,.0f} MB resident before any call.", "",
             "| engine | what | fast s, wall / CPU | naive s, wall / CPU | ratio, wall / CPU | peak RSS MB, fast / naive "
             "(added by the call) | max abs diff (size) | fast s at full depth (est., CPU) | naive at full depth (est., CPU) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    label = {"eap": "per-example EAP", "path": "path patching, every head and MLP at END -> logits",
             "faith": "faithfulness curve (top-k of a random ranking)"}
    for r in info["rows"]:
        fw, fc, nw, nc = med(r["fast_wall"]), med(r["fast_cpu"]), med(r["naive_wall"]), med(r["naive_cpu"])
        est = f"{fit_full(med(r['fast_cpu_1']), fc, L, full):.0f}" if "fast_cpu_1" in r else "-"
        lines.append(
            f"| {label[r['engine']]} | {r['what']} | {fw:.2f} / {fc:.2f} | {nw:.1f} / {nc:.1f} | "
            f"{nw / fw:.1f}x / {nc / fc:.1f}x | {r['fast_peak_mb']:,.0f} ({r['fast_added_mb']:,.0f}) / "
            f"{r['naive_peak_mb']:,.0f} ({r['naive_added_mb']:,.0f}) | {r['max_abs_diff']:.1e} ({r['size']:.3g}) | "
            f"{est} | >= {nc * full / L:.0f} |")
    for n in info["notes"]:
        lines.append(f"\n* {n}")
    ratios = {r["engine"]: med(r["naive_wall"]) / med(r["fast_wall"]) for r in info["rows"]}
    lines.append("\nRESULT families " + fam + " " + " ".join(f"{k}={v:.1f}" for k, v in ratios.items()))
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny shapes of both families (family_config shrunk): a smoke test")
    p.add_argument("--families", nargs="+", default=["llama", "gemma2"], choices=sorted(FULL_LAYERS))
    p.add_argument("--engines", nargs="+", default=["eap", "path", "faith"], choices=["eap", "path", "faith"])
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--d-vocab", type=int, default=None, help="reduce the vocabulary (default: the family's real one)")
    p.add_argument("--n", type=int, default=4, help="prompts")
    p.add_argument("--pos", type=int, default=12, help="tokens per prompt")
    p.add_argument("--fractions", type=float, nargs="+", default=[0.0, 0.01, 0.05, 0.2, 0.5, 1.0])
    p.add_argument("--repeats", type=int, default=3, help="timed calls of each fast engine (median)")
    p.add_argument("--naive-repeats", type=int, default=1, help="timed calls of each naive loop (median)")
    p.add_argument("--naive-senders", type=int, default=8,
                   help="senders the naive path-patching loop runs (spread over the layers; its time is scaled up)")
    p.add_argument("--no-depth-fit", action="store_true", help="skip timing the fast engines on one layer")
    p.add_argument("--scale", type=float, default=2.0, help="multiply every weight matrix by this")
    p.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "1")))
    p.add_argument("--family", help=argparse.SUPPRESS)  # internal: run one family in this process
    a = p.parse_args(argv)
    if a.family:
        child(a)
        return 0
    if a.quick:
        a.n, a.pos, a.repeats, a.naive_repeats = 3, 8, 1, 1
    print(f"{time.strftime('%Y-%m-%d')}, {a.threads} torch thread(s), families {a.families}", flush=True)
    passthrough = [x for x in (argv if argv is not None else sys.argv[1:])]
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    for fam in a.families:
        cmd = [sys.executable, __file__, *passthrough, "--family", fam, "--n", str(a.n), "--pos", str(a.pos),
               "--repeats", str(a.repeats), "--naive-repeats", str(a.naive_repeats), "--threads", str(a.threads)]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, env=env)  # its progress goes to stderr
        if proc.returncode != 0:
            print(f"{fam}: the child process failed (exit {proc.returncode})")
            return proc.returncode
        info = json.loads(next(l for l in proc.stdout.splitlines() if l.startswith("JSON "))[5:])
        print()
        print(report(info), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
