"""The usual wrong answers to notebook 03_spectral_recipe's exercises and the message its check must give each
(tests/test_learner_notebooks.py runs them).

{exercise function: {wrong answer: (source of the whole wrong def, regex the check's message matches)}}
"""
from learner_wrong_common import W

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
    "layer_matched_control": {
        "draws the candidates": (W("""
            def layer_matched_control(heads, n_heads, seed):
                return list(heads)
            """), r"control for \['a1\.h0', 'a1\.h3'\] \(seed 0\) contains candidate head\(s\)"),
        "every head from layer 0": (W("""
            def layer_matched_control(heads, n_heads, seed):
                rng = np.random.default_rng(seed)
                pool = [f"a0.h{i}" for i in range(n_heads) if f"a0.h{i}" not in heads]
                return list(rng.choice(pool, size=len(heads), replace=False))
            """), r"control for \['a1\.h0', 'a1\.h3'\] \(seed 0\) has heads per layer \{0: 2\}, expected \{1: 2\}"),
        "unseeded": (W("""
            def layer_matched_control(heads, n_heads, seed):
                rng = np.random.default_rng()
                layers = {}
                for h in heads:
                    layers.setdefault(int(h.split(".")[0][1:]), []).append(h)
                out = []
                for layer, chosen in sorted(layers.items()):
                    pool = [f"a{layer}.h{i}" for i in range(n_heads) if f"a{layer}.h{i}" not in heads]
                    out += list(rng.choice(pool, size=len(chosen), replace=False))
                return out
            """), r"the same seed \(\d+\) gave different controls"),
        "seed ignored": (W("""
            def layer_matched_control(heads, n_heads, seed):
                rng = np.random.default_rng(0)
                layers = {}
                for h in heads:
                    layers.setdefault(int(h.split(".")[0][1:]), []).append(h)
                out = []
                for layer, chosen in sorted(layers.items()):
                    pool = [f"a{layer}.h{i}" for i in range(n_heads) if f"a{layer}.h{i}" not in heads]
                    out += list(rng.choice(pool, size=len(chosen), replace=False))
                return out
            """), r"six seeds all gave the same control .*: the draw must depend on the seed"),
    },
}
