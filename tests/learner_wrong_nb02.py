"""The usual wrong answers to notebook 02_consistency_specificity's exercises and the message its check must give each
(tests/test_learner_notebooks.py runs them).

{exercise function: {wrong answer: (source of the whole wrong def, regex the check's message matches)}}
"""
from learner_wrong_common import W

# the worked eap_edge_scores, from which each slip below changes one line
_EAP = W("""
    def eap_edge_scores(model, task, graph):
        L = model.cfg.n_layers

        def where(name, out):
            if name in ("embed", "logits"):
                return ("blocks.0.hook_resid_pre" if out else f"blocks.{L - 1}.hook_resid_post"), None
            if name.startswith("m"):
                return f"blocks.{name[1:]}.hook_mlp_{'out' if out else 'in'}", None
            l, h = name[1:].split(".")[:2]
            return (f"blocks.{l}.attn.hook_result" if out else f"blocks.{l}.hook_{name[-1]}_input"), int(h[1:])

        def pick(acts, at):
            hook, head = at
            return acts[hook] if head is None else acts[hook][:, :, head]

        hooks = {where(s, True)[0] for s in graph.senders} | {where(r, False)[0] for r in graph.receivers}
        with engine_view(model, split_qkv=True, attn_result=True, mlp_in=True, frozen=True):
            with torch.no_grad():
                _, corrupt = model.run_with_cache(task.corrupt, names_filter=lambda n: n in hooks)
            clean = {}

            def keep(act, hook):
                if hook.name == "blocks.0.hook_resid_pre":
                    act = act.detach().requires_grad_(True)
                act.retain_grad()
                clean[hook.name] = act
                return act

            with model.hooks(fwd_hooks=[(lambda n: n in hooks, keep)]):
                logits = model(task.clean)
            task.logit_diff(logits).sum().backward()
            grads = {k: v.grad for k, v in clean.items()}
            diff = torch.stack([pick(corrupt, where(s, True)) - pick(clean, where(s, True)).detach() for s in graph.senders], 1)
            grad = torch.stack([pick(grads, where(r, False)) for r in graph.receivers], 1)
        return torch.einsum("bspd,brpd->bsr", diff, grad) * graph.edge_mask().to(diff.device)
    """)


def _eap(old: str, new: str) -> str:
    assert _EAP.count(old) == 1, old
    return _EAP.replace(old, new)


_EAP_WHAT = r"edge scores of examples 0-5: "
EAP_WRONG = {
    "clean minus corrupted": (
        _eap("pick(corrupt, where(s, True)) - pick(clean, where(s, True)).detach()",
             "pick(clean, where(s, True)).detach() - pick(corrupt, where(s, True))"),
        _EAP_WHAT + r"every score has the wrong sign: you took the sender's clean output minus its corrupted one"),
    "gradient of the batch mean": (
        _eap("task.logit_diff(logits).sum().backward()", "task.logit_diff(logits).mean().backward()"),
        _EAP_WHAT + r"every score is 1/6 of the library's: you backpropagated the mean of the batch's 6 metrics"),
    "senders and receivers transposed": (
        _eap('torch.einsum("bspd,brpd->bsr", diff, grad) * graph.edge_mask().to(diff.device)',
             'torch.einsum("bspd,brpd->brs", diff, grad) * graph.edge_mask().T.to(diff.device)'),
        _EAP_WHAT + r"your matrix is \[receivers, senders\], transposed"),
    "no edge mask": (
        _eap(' * graph.edge_mask().to(diff.device)', ''),
        _EAP_WHAT + r"the entries that are not edges are not 0 .* multiply by graph.edge_mask\(\)"),
    "gradient at the receiver's output": (
        _eap("grad = torch.stack([pick(grads, where(r, False)) for r in graph.receivers], 1)",
             "grad = torch.stack([pick(grads, where(r.rsplit('.', 1)[0] if r.startswith('a') else r, r != 'logits'))\n"
             "                            for r in graph.receivers], 1)"),
        _EAP_WHAT + r"you took the gradient at each receiver's \*output\* \(a head's result, an MLP's output\)"),
    "the final position only": (
        _eap('return torch.einsum("bspd,brpd->bsr", diff, grad)',
             'rows = torch.arange(diff.shape[0])\n'
             '    return torch.einsum("bsd,brd->bsr", diff[rows, :, task.end_pos], grad[rows, :, task.end_pos])'),
        _EAP_WHAT + r"you kept the final position only: an edge's score sums over every position"),
    "view flags set by hand": (
        _eap("    L = model.cfg.n_layers\n", "    L = model.cfg.n_layers\n    model.set_use_hook_mlp_in(True)\n"),
        r"your function left the model's settings changed \(use_hook_mlp_in\): change them only inside "
        r"`with engine_view\(model, \.\.\.\)`"),
}

WRONG = {
    "edge_score_to_logits": {
        "clean minus corrupted": (W("""
            def edge_score_to_logits(model, task, sender_hook, example):
                final_hook = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
                with torch.no_grad():
                    _, corrupt_cache = model.run_with_cache(task.corrupt, names_filter=sender_hook)
                kept = {}

                def keep(act, hook):
                    act.retain_grad()
                    kept[hook.name] = act
                    return act

                with model.hooks(fwd_hooks=[(sender_hook, keep), (final_hook, keep)]):
                    logits = model(task.clean)
                task.logit_diff(logits)[example].backward()
                delta = kept[sender_hook][example].detach() - corrupt_cache[sender_hook][example]
                score = (delta * kept[final_hook].grad[example]).sum().item()
                model.zero_grad(set_to_none=True)
                return score
            """), (r"edge m0 -> logits, example 0: you have .*, expected .* -- the sign is flipped: the difference is "
                  r"corrupted output minus clean output")),
        "gradient of the batch mean": (W("""
            def edge_score_to_logits(model, task, sender_hook, example):
                final_hook = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
                with torch.no_grad():
                    _, corrupt_cache = model.run_with_cache(task.corrupt, names_filter=sender_hook)
                kept = {}

                def keep(act, hook):
                    act.retain_grad()
                    kept[hook.name] = act
                    return act

                with model.hooks(fwd_hooks=[(sender_hook, keep), (final_hook, keep)]):
                    logits = model(task.clean)
                task.logit_diff(logits).mean().backward()
                delta = corrupt_cache[sender_hook][example] - kept[sender_hook][example].detach()
                score = (delta * kept[final_hook].grad[example]).sum().item()
                model.zero_grad(set_to_none=True)
                return score
            """), (r"edge m0 -> logits, example 0: you have .*, expected .* -- that is 1/8 of the edge's score: you "
                  r"backpropagated the mean metric over the batch's 8 prompts")),
        "gradient at the sender (node, not edge)": (W("""
            def edge_score_to_logits(model, task, sender_hook, example):
                with torch.no_grad():
                    _, corrupt_cache = model.run_with_cache(task.corrupt, names_filter=sender_hook)
                kept = {}

                def keep(act, hook):
                    act.retain_grad()
                    kept[hook.name] = act
                    return act

                with model.hooks(fwd_hooks=[(sender_hook, keep)]):
                    logits = model(task.clean)
                task.logit_diff(logits)[example].backward()
                delta = corrupt_cache[sender_hook][example] - kept[sender_hook][example].detach()
                score = (delta * kept[sender_hook].grad[example]).sum().item()
                model.zero_grad(set_to_none=True)
                return score
            """), (r"edge m0 -> logits, example 0: you have .*, expected .* -- that is the gradient taken at the "
                  r"sender's own output, which sums every path from the sender \(its node score\)")),
        "one score per position": (W("""
            def edge_score_to_logits(model, task, sender_hook, example):
                final_hook = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
                with torch.no_grad():
                    _, corrupt_cache = model.run_with_cache(task.corrupt, names_filter=sender_hook)
                kept = {}

                def keep(act, hook):
                    act.retain_grad()
                    kept[hook.name] = act
                    return act

                with model.hooks(fwd_hooks=[(sender_hook, keep), (final_hook, keep)]):
                    logits = model(task.clean)
                task.logit_diff(logits)[example].backward()
                delta = corrupt_cache[sender_hook][example] - kept[sender_hook][example].detach()
                score = (delta * kept[final_hook].grad[example]).sum(-1).detach()
                model.zero_grad(set_to_none=True)
                return score
            """), r"edge score m0 -> logits: expected one number, got a tensor of shape \(\d+,\)"),
    },
    "eap_edge_scores": EAP_WRONG,
    "reuse_at_p": {
        "floor instead of ceil": (W("""
            def reuse_at_p(membership, p):
                n = membership.shape[0]
                in_shared = membership.sum(0) >= math.floor(p / 100 * n)
                covered = (membership & in_shared).sum(1).float()
                return (covered / membership.sum(1).float()).mean().item()
            """), (r"reuse@80 on a \(9, 12\) membership: you have .* -- you rounded down: 80/100 \* 9 = 7\.2, and S_P "
                  r"needs at least ceil of it, 8 circuits, not floor \(7\)")),
        "more than instead of at least": (W("""
            def reuse_at_p(membership, p):
                n = membership.shape[0]
                in_shared = membership.sum(0) > math.ceil(p / 100 * n)
                covered = (membership & in_shared).sum(1).float()
                return (covered / membership.sum(1).float()).mean().item()
            """), (r"reuse@100 on a \(9, 12\) membership: you have 0\.0000, expected .* -- you kept the components in "
                  r"\*more than\* 9 circuits \(`>`\)")),
        "the size of S_P": (W("""
            def reuse_at_p(membership, p):
                n = membership.shape[0]
                return float((membership.sum(0) >= math.ceil(p / 100 * n)).sum())
            """), (r"reuse@100 on a \(9, 12\) membership: you have [\d.]+, expected .* -- you returned \|S_P\|, the "
                  r"size of the shared set")),
        "divides by |S_P|": (W("""
            def reuse_at_p(membership, p):
                n = membership.shape[0]
                in_shared = membership.sum(0) >= math.ceil(p / 100 * n)
                covered = (membership & in_shared).sum(1).float()
                return (covered / in_shared.sum().float()).mean().item()
            """), (r"reuse@\d+ on a \(9, 12\) membership: you have .* -- you divided each example's overlap "
                  r"\|C_i ∩ S_P\| by \|S_P\|")),
    },
    "size_matched_control": {
        "no shortfall check (numpy's error)": (W("""
            def size_matched_control(circuit, heads, mlps, seed):
                rng = np.random.default_rng(seed)
                free_heads = [h for h in heads if h not in circuit]
                free_mlps = [m for m in mlps if m not in circuit]
                n_heads = sum(c in heads for c in circuit)
                n_mlps = sum(c in mlps for c in circuit)
                return {str(c) for c in rng.choice(free_heads, n_heads, replace=False)} | \\
                       {str(c) for c in rng.choice(free_mlps, n_mlps, replace=False)}
            """), (r"it has 9 MLPs but only 3 lie outside it\. You raised ValueError\('Cannot take a larger sample"
                  r".*make the message name the shortfall: how many MLPs are needed \(9\) and how many are left \(3\)")),
        "a smaller control when too few are left": (W("""
            def size_matched_control(circuit, heads, mlps, seed):
                rng = np.random.default_rng(seed)
                free_heads = [h for h in heads if h not in circuit]
                free_mlps = [m for m in mlps if m not in circuit]
                n_heads = min(sum(c in heads for c in circuit), len(free_heads))
                n_mlps = min(sum(c in mlps for c in circuit), len(free_mlps))
                return {str(c) for c in rng.choice(free_heads, n_heads, replace=False)} | \\
                       {str(c) for c in rng.choice(free_mlps, n_mlps, replace=False)}
            """), r"it has 9 MLPs but only 3 lie outside it, so no size-matched control exists; you returned \["),
        "an error without the counts": (W("""
            def size_matched_control(circuit, heads, mlps, seed):
                rng = np.random.default_rng(seed)
                free_heads = [h for h in heads if h not in circuit]
                free_mlps = [m for m in mlps if m not in circuit]
                n_heads = sum(c in heads for c in circuit)
                n_mlps = sum(c in mlps for c in circuit)
                if n_heads > len(free_heads) or n_mlps > len(free_mlps):
                    raise ValueError("not enough components outside the circuit")
                return {str(c) for c in rng.choice(free_heads, n_heads, replace=False)} | \\
                       {str(c) for c in rng.choice(free_mlps, n_mlps, replace=False)}
            """), (r"You raised ValueError\('not enough components outside the circuit'\); make the message name "
                  r"the shortfall")),
        "draws from every head, circuit included": (W("""
            def size_matched_control(circuit, heads, mlps, seed):
                rng = np.random.default_rng(seed)
                free_mlps = [m for m in mlps if m not in circuit]
                n_heads = sum(c in heads for c in circuit)
                n_mlps = sum(c in mlps for c in circuit)
                return {str(c) for c in rng.choice(heads, n_heads, replace=False)} | \\
                       {str(c) for c in rng.choice(free_mlps, n_mlps, replace=False)}
            """), r"overlaps the circuit in \['a\d+\.h\d+'\]: draw only from components outside it"),
        "heads and MLPs pooled": (W("""
            def size_matched_control(circuit, heads, mlps, seed):
                rng = np.random.default_rng(seed)
                pool = [c for c in heads + mlps if c not in circuit]
                return {str(c) for c in rng.choice(pool, len(circuit), replace=False)}
            """), r"circuit \[.*\] has \d+ head\(s\) and \d+ MLP\(s\); your control \[.*\] has \d+ and \d+"),
        "unseeded": (W("""
            def size_matched_control(circuit, heads, mlps, seed):
                rng = np.random.default_rng()
                free_heads = [h for h in heads if h not in circuit]
                free_mlps = [m for m in mlps if m not in circuit]
                n_heads = sum(c in heads for c in circuit)
                n_mlps = sum(c in mlps for c in circuit)
                return {str(c) for c in rng.choice(free_heads, n_heads, replace=False)} | \\
                       {str(c) for c in rng.choice(free_mlps, n_mlps, replace=False)}
            """), r"seed 0 gave .* and then .*: the same seed must give the same control"),
        "seed ignored": (W("""
            def size_matched_control(circuit, heads, mlps, seed):
                rng = np.random.default_rng(0)
                free_heads = [h for h in heads if h not in circuit]
                free_mlps = [m for m in mlps if m not in circuit]
                n_heads = sum(c in heads for c in circuit)
                n_mlps = sum(c in mlps for c in circuit)
                return {str(c) for c in rng.choice(free_heads, n_heads, replace=False)} | \\
                       {str(c) for c in rng.choice(free_mlps, n_mlps, replace=False)}
            """), r"10 seeds all gave \[.*\]: the control must be random"),
    },
    "paired_permutation_p": {
        "strictly greater": (W("""
            def paired_permutation_p(a, b, n_permutations, seed):
                d = (a - b).double()
                gen = torch.Generator().manual_seed(seed)
                signs = torch.randint(0, 2, (n_permutations, len(d)), generator=gen).double() * 2 - 1
                stats = (signs * d).mean(1)
                return ((stats > d.mean()).sum().item() + 1) / (n_permutations + 1)
            """), (r"no difference at all: you have p = .*, expected about 1 \(every permuted statistic equals the "
                  r"observed one")),
        "no +1": (W("""
            def paired_permutation_p(a, b, n_permutations, seed):
                d = (a - b).double()
                gen = torch.Generator().manual_seed(seed)
                signs = torch.randint(0, 2, (n_permutations, len(d)), generator=gen).double() * 2 - 1
                stats = (signs * d).mean(1)
                return (stats >= d.mean() - 1e-12).sum().item() / n_permutations
            """), r"a clear effect: p = 0 is not in \(0, 1\]; with the \+1 rule p is never 0"),
        "two-sided": (W("""
            def paired_permutation_p(a, b, n_permutations, seed):
                d = (a - b).double()
                gen = torch.Generator().manual_seed(seed)
                signs = torch.randint(0, 2, (n_permutations, len(d)), generator=gen).double() * 2 - 1
                stats = (signs * d).mean(1).abs()
                return ((stats >= d.mean().abs() - 1e-12).sum().item() + 1) / (n_permutations + 1)
            """), (r"a small effect: you have p = .*, expected about .* -- that is the two-sided p-value \(\|permuted "
                  r"mean\| against \|observed mean\|\): the test is one-sided")),
        "wrong tail": (W("""
            def paired_permutation_p(a, b, n_permutations, seed):
                d = (a - b).double()
                gen = torch.Generator().manual_seed(seed)
                signs = torch.randint(0, 2, (n_permutations, len(d)), generator=gen).double() * 2 - 1
                stats = (signs * d).mean(1)
                return ((stats <= d.mean() + 1e-12).sum().item() + 1) / (n_permutations + 1)
            """), (r"a clear effect: you have p = 1, expected about 9\.999e-05 -- you counted the permuted means at "
                  r"or \*below\* the observed one \(the wrong tail")),
    },
    "node_scores": {
        "signed sum": (W("""
            def node_scores(edges, edge_mask):
                total = edges.sum(1)
                mean = edges.abs().sum(1) / edge_mask.sum(1).float()
                return total[1:], mean[1:]
            """), r"example 0, sum scores: you summed the signed edge scores"),
        "divided by every receiver": (W("""
            def node_scores(edges, edge_mask):
                total = edges.abs().sum(1)
                return total[1:], total[1:] / edges.shape[1]
            """), r"example 0, mean scores: you divided by the number of receivers \(\d+\), the same for every component"),
        "embed kept": (W("""
            def node_scores(edges, edge_mask):
                total = edges.abs().sum(1)
                return total, total / edge_mask.sum(1).float()
            """), r"example 0, sum scores: that is one row per \*sender\*: the first sender, embed, is not a component"),
    },
    "shared_set_p": {
        "rounded down": (W("""
            def shared_set_p(membership, components, p):
                need = math.floor(p / 100 * membership.shape[0])
                return {c for c, count in zip(components, membership.sum(0).tolist()) if count >= need}
            """), r"S_34 of 9 circuits: you have .* -- you rounded down: S_P needs at least ceil\(34/100 \* 9\) = 4"),
        "strictly more": (W("""
            def shared_set_p(membership, components, p):
                need = math.ceil(p / 100 * membership.shape[0])
                return {c for c, count in zip(components, membership.sum(0).tolist()) if count > need}
            """), r"S_100 of 9 circuits: you have .* -- you kept the components in \*more than\* 9 circuits"),
        "P as a fraction": (W("""
            def shared_set_p(membership, components, p):
                need = math.ceil(p * membership.shape[0])
                return {c for c, count in zip(components, membership.sum(0).tolist()) if count >= need}
            """), r"S_100 of 9 circuits: .* -- you compared the counts with p \* n, not p/100 \* n"),
    },
    "cross_task_row": {
        "ablated accuracy, not the drop": (W("""
            def cross_task_row(model, tasks, circuit):
                row = {}
                with torch.no_grad():
                    for name, task in tasks.items():
                        with model.hooks(fwd_hooks=ablation_hooks(model, circuit, "zero")):
                            row[name] = task.accuracy(model(task.clean)).mean().item()
                return row
            """), r"with \[.*\] ablated: you have .*, expected .* -- that is the accuracy \*with\* the circuit ablated"),
        "only the circuit's own task": (W("""
            def cross_task_row(model, tasks, circuit):
                task = tasks["ioi"]
                with torch.no_grad():
                    clean = task.accuracy(model(task.clean)).mean().item()
                    with model.hooks(fwd_hooks=ablation_hooks(model, circuit, "zero")):
                        ablated = task.accuracy(model(task.clean)).mean().item()
                return {"ioi": clean - ablated}
            """), r"your row has the tasks \['ioi'\]; it needs every task"),
        "hook left attached": (W("""
            def cross_task_row(model, tasks, circuit):
                row = {}
                for name, task in tasks.items():
                    with torch.no_grad():
                        clean = task.accuracy(model(task.clean)).mean().item()
                        for hook_name, fn in ablation_hooks(model, circuit, "zero"):
                            model.add_hook(hook_name, fn)
                        ablated = task.accuracy(model(task.clean)).mean().item()
                    row[name] = clean - ablated
                return row
            """), r"a hook was still attached to the model after your function ran"),
    },
    "jaccard_vs_chance": {
        "overlap coefficient": (W("""
            def jaccard_vs_chance(a, b, heads, mlps, n_random, seed):
                rng = np.random.default_rng(seed)

                def overlap(x, y):
                    return len(x & y) / min(len(x), len(y))

                def draw(s):
                    n_h, n_m = sum(c in heads for c in s), sum(c in mlps for c in s)
                    return {str(c) for c in rng.choice(heads, n_h, replace=False)} | {str(c) for c in rng.choice(mlps, n_m, replace=False)}

                return overlap(set(a), set(b)), float(np.mean([overlap(draw(a), draw(b)) for _ in range(n_random)]))
            """), r"observed: you have .* -- that is \|A ∩ B\| / min\(\|A\|, \|B\|\), the overlap coefficient"),
        "random sets ignore the kinds": (W("""
            def jaccard_vs_chance(a, b, heads, mlps, n_random, seed):
                rng = np.random.default_rng(seed)
                pool = list(heads) + list(mlps)

                def overlap(x, y):
                    return len(x & y) / len(x | y)

                def draw(s):
                    return {str(c) for c in rng.choice(pool, len(s), replace=False)}

                return overlap(set(a), set(b)), float(np.mean([overlap(draw(a), draw(b)) for _ in range(n_random)]))
            """), r"chance: you have .* -- your random sets ignore the kinds"),
    },
}
