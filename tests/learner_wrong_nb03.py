"""The usual wrong answers to notebook 03_spectral_recipe's exercises and the message its check must give each
(tests/test_learner_notebooks.py runs them).

{exercise function: {wrong answer: (source of the whole wrong def, regex the check's message matches)}}
"""
from learner_wrong_common import W


def _ablation_test(pool="others of the layer", p="(k + 1) / (n_draws + 1)", count="d >= drop", drop="loss(hs) - clean",
                   mode="mode"):
    """Exercise 5's solution with one slip: ``pool`` the heads a draw comes from (``"others"``: any head outside the
    found set; ``"layer"``: every head of the layer), ``p`` / ``count`` the p-value, ``drop`` a set's drop, ``mode``."""
    pools = {"others of the layer": '[f"a{layer}.h{j}" for j in range(model.cfg.n_heads) if f"a{layer}.h{j}" not in heads]',
             "layer": '[f"a{layer}.h{j}" for j in range(model.cfg.n_heads)]'}
    if pool == "others":
        draw = ('others = [f"a{l}.h{j}" for l in range(model.cfg.n_layers) for j in range(model.cfg.n_heads) '
                'if f"a{l}.h{j}" not in heads]\n        draw = [str(h) for h in rng.choice(others, size=len(heads), replace=False)]')
    else:
        draw = ("draw = []\n        for layer, c in sorted(Counter(int(h.split('.')[0][1:]) for h in heads).items()):\n"
                f"            pool = {pools[pool]}\n            draw += [str(h) for h in rng.choice(pool, size=c, replace=False)]")
    return W(f"""
def ablation_test(model, probe, heads, mode, n_draws, seed):
    def loss(hs):
        with torch.no_grad():
            logits = model.run_with_hooks(probe.tokens, fwd_hooks=ablation_hooks(model, hs, {mode}, reference=probe.tokens) if hs else [])
        return float(F.cross_entropy(logits[:, probe.query_pos], probe.targets))

    def drop_of(hs):
        return {drop}

    clean = loss([])
    drop = drop_of(heads)
    controls = []
    for i in range(n_draws):
        rng = np.random.default_rng(seed + i)
        {draw}
        controls.append(draw)
    control_drops = [drop_of(c) for c in controls]
    k = sum({count} for d in control_drops)
    p = {p}
    return {{"drop": drop, "controls": controls, "control_drops": control_drops, "p": p}}
""")


WRONG = {
    "participation_ratio": {
        "mean-centred": (W("""
            def participation_ratio(X):
                X = X - X.mean(0)
                s = torch.linalg.svdvals(X.double())
                p = s**2 / (s**2).sum()
                p = p[p > 0]
                return float(torch.exp(-(p * p.log()).sum()))
            """), (r"PR of the identity 3×3 \(3 equal directions\): you have 2, expected 3 -- you centred X \(subtracted "
                  r"its mean row\): this PR is taken of X as it is, not mean-centred")),
        "entropy without exp": (W("""
            def participation_ratio(X):
                s = torch.linalg.svdvals(X.double())
                p = s**2 / (s**2).sum()
                p = p[p > 0]
                return float(-(p * p.log()).sum())
            """), (r"PR of the identity 3×3 \(3 equal directions\): you have 1\.099, expected 3 -- that is the entropy "
                  r"-Σ p log p itself: the PR is its exponential")),
        "singular values not squared": (W("""
            def participation_ratio(X):
                s = torch.linalg.svdvals(X.double())
                p = s / s.sum()
                p = p[p > 0]
                return float(torch.exp(-(p * p.log()).sum()))
            """), r"PR of the random 40×6: you have .*, expected .* -- p must come from the \*squared\* singular values"),
        "(sum s^2)^2 / sum s^4": (W("""
            def participation_ratio(X):
                s2 = torch.linalg.svdvals(X.double()) ** 2
                return float(s2.sum() ** 2 / (s2 ** 2).sum())
            """), (r"PR of the random 40×6: you have .*, expected .* -- that is the order-2 participation ratio "
                  r"\(Σσ²\)² / Σσ⁴")),
    },
    "pr_integral": {
        "PR itself, no excess": (W("""
            def pr_integral(pr, tokens_seen):
                t = torch.tensor(tokens_seen, dtype=torch.float64)
                keep = t > 0
                return torch.trapezoid(pr.double()[keep], t[keep].log(), dim=0)
            """), r"PR integral \[n_layers, n_heads\]: you integrated PR itself"),
        "step 0 kept (log 0)": (W("""
            def pr_integral(pr, tokens_seen):
                t = torch.tensor(tokens_seen, dtype=torch.float64)
                return torch.trapezoid((pr.double() - 1).clamp(min=0), t.log(), dim=0)
            """), r"your integral has inf or nan: the first checkpoint has tokens_seen = 0"),
        "linear tokens": (W("""
            def pr_integral(pr, tokens_seen):
                t = torch.tensor(tokens_seen, dtype=torch.float64)
                keep = t > 0
                return torch.trapezoid((pr.double() - 1).clamp(min=0)[keep], t[keep], dim=0)
            """), r"you integrated over tokens seen, not over log\(tokens seen\)"),
        "left Riemann sum": (W("""
            def pr_integral(pr, tokens_seen):
                t = torch.tensor(tokens_seen, dtype=torch.float64)
                keep = t > 0
                f, x = (pr.double() - 1).clamp(min=0)[keep], t[keep].log()
                return (f[:-1] * (x[1:] - x[:-1])[:, None, None]).sum(0)
            """), r"that is a left Riemann sum"),
    },
    "induction_selectivity": {
        "reads a_pos, not a_pos + 1": (W("""
            def induction_selectivity(att, a_pos, base_pos):
                rows = torch.arange(att.shape[0])
                target = att[rows, :, :, a_pos].mean(0)
                idx = base_pos[:, None, None, :].expand(-1, att.shape[1], att.shape[2], -1)
                return target / att.gather(3, idx).mean(3).mean(0).clamp(min=1e-8)
            """), (r"induction selectivity \[n_layers, n_heads\]: you read the attention to a_pos, the earlier A itself "
                  r"\(the duplicate-token target\)")),
        "no mean over prompts": (W("""
            def induction_selectivity(att, a_pos, base_pos):
                rows = torch.arange(att.shape[0])
                target = att[rows, :, :, a_pos + 1]
                idx = base_pos[:, None, None, :].expand(-1, att.shape[1], att.shape[2], -1)
                return target / att.gather(3, idx).mean(3).clamp(min=1e-8)
            """), r"expected shape \(\d+, \d+\), got \(\d+, \d+, \d+\) -- you have an extra dimension 0"),
        "baseline over target": (W("""
            def induction_selectivity(att, a_pos, base_pos):
                rows = torch.arange(att.shape[0])
                target = att[rows, :, :, a_pos + 1].mean(0)
                idx = base_pos[:, None, None, :].expand(-1, att.shape[1], att.shape[2], -1)
                return att.gather(3, idx).mean(3).mean(0) / target.clamp(min=1e-8)
            """), (r"induction selectivity \[n_layers, n_heads\]: the ratio is upside down: selectivity is the target "
                  r"attention divided by the baseline attention")),
        "mean of the per-example ratios": (W("""
            def induction_selectivity(att, a_pos, base_pos):
                rows = torch.arange(att.shape[0])
                target = att[rows, :, :, a_pos + 1]
                idx = base_pos[:, None, None, :].expand(-1, att.shape[1], att.shape[2], -1)
                return (target / att.gather(3, idx).mean(3).clamp(min=1e-8)).mean(0)
            """), (r"induction selectivity \[n_layers, n_heads\]: you averaged the per-example ratios: divide the "
                  r"mean \(over examples\) of the target attention by the mean of the baseline attention")),
    },
    "ablation_test": {
        "controls from any layer": (_ablation_test(pool="others"), r"controls not layer-matched: draw \d+ .* has heads per layer"),
        "controls may hold found heads": (_ablation_test(pool="layer"), r"holds found head\(s\) .*: controls may include "
                                                                        r"found heads"),
        "p without +1": (_ablation_test(p="k / n_draws"), r"p without the \+1 correction"),
        "p the wrong way": (_ablation_test(count="d <= drop"), r"p counted the wrong way"),
        "two-sided p": (_ablation_test(p="min(1, 2 * min(k + 1, sum(d <= drop for d in control_drops) + 1) / (n_draws + 1))"),
                        r"that is a two-sided p"),
        "one head at a time, summed": (_ablation_test(drop="sum(loss([h]) - clean for h in hs)"),
                                       r"you ablated the heads one at a time and summed their drops"),
        "mode ignored (zero)": (_ablation_test(mode='"zero"'), r"that is the drop with zero ablation, but this case asks for "
                                                              r"mode='mean'"),
    },
    "ablated_loss": {
        "loss over the whole sequence": (W("""
            def ablated_loss(model, probe, heads):
                def zero(z, hook, head):
                    z[:, :, head] = 0
                    return z
                hooks = [(f"blocks.{int(h.split('.')[0][1:])}.attn.hook_z", partial(zero, head=int(h.split(".h")[1])))
                         for h in heads]
                with torch.no_grad():
                    return float(model.run_with_hooks(probe.tokens, return_type="loss", fwd_hooks=hooks))
            """), r"you took the loss over the whole sequence"),
        "query position only": (W("""
            def ablated_loss(model, probe, heads):
                def zero(z, hook, head):
                    z[:, probe.query_pos, head] = 0
                    return z
                hooks = [(f"blocks.{int(h.split('.')[0][1:])}.attn.hook_z", partial(zero, head=int(h.split(".h")[1])))
                         for h in heads]
                with torch.no_grad():
                    logits = model.run_with_hooks(probe.tokens, fwd_hooks=hooks)
                return float(F.cross_entropy(logits[:, probe.query_pos], probe.targets))
            """), r"loss on B with \[.*\] ablated: you have .*, expected .* -- you zeroed the heads at the query "
                  r"position only"),
        "d_head axis": (W("""
            def ablated_loss(model, probe, heads):
                def zero(z, hook, head):
                    z[..., head] = 0
                    return z
                hooks = [(f"blocks.{int(h.split('.')[0][1:])}.attn.hook_z", partial(zero, head=int(h.split(".h")[1])))
                         for h in heads]
                with torch.no_grad():
                    logits = model.run_with_hooks(probe.tokens, fwd_hooks=hooks)
                return float(F.cross_entropy(logits[:, probe.query_pos], probe.targets))
            """), r"you zeroed one dimension of d_head in every head"),
        "hook left attached": (W("""
            def ablated_loss(model, probe, heads):
                def zero(z, hook, head):
                    z[:, :, head] = 0
                    return z
                for h in heads:
                    model.add_hook(f"blocks.{int(h.split('.')[0][1:])}.attn.hook_z", partial(zero, head=int(h.split(".h")[1])))
                with torch.no_grad():
                    logits = model(probe.tokens)
                return float(F.cross_entropy(logits[:, probe.query_pos], probe.targets))
            """), r"a hook was left attached to the model after ablated_loss returned"),
    },
    "k_composition": {
        "Q-composition": (W("""
            def k_composition(W_OV, W_QK):
                return float((W_OV @ W_QK).norm() / (W_OV.norm() * W_QK.norm()))
            """), r"K-composition of a0\.h0 \(sender\) with a1\.h0 \(receiver\): you have .* -- that is Q-composition"),
        "not normalised": (W("""
            def k_composition(W_OV, W_QK):
                return float((W_OV @ W_QK.T).norm())
            """), r"you did not normalise"),
    },
    "induction_scores": {
        "duplicate-token key": (W("""
            def induction_scores(pattern, length):
                q = torch.arange(length + 1, 2 * length + 1)
                return pattern[:, :, q, q - length].mean((0, 2))
            """), r"induction scores of layer 0 \[n_heads\]: you read the attention to the earlier occurrence itself"),
        "whole diagonal": (W("""
            def induction_scores(pattern, length):
                return pattern.diagonal(-(length - 1), dim1=2, dim2=3).mean((0, 2))
            """), r"you averaged the whole diagonal"),
    },
}
