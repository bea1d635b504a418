"""The usual wrong answers to notebook 04_comparing_methods's exercises and the message its check must give each
(tests/test_learner_notebooks.py runs them).

{exercise function: {wrong answer: (source of the whole wrong def, regex the check's message matches)}}
"""
from learner_wrong_common import W

WRONG = {
    "edge_score_at_alpha": {
        "gradient at the block-0 input": (W("""
            def edge_score_at_alpha(model, task, sender, example, alpha):
                clean, corrupt = task.clean[example:example + 1], task.corrupt[example:example + 1]
                x_clean = sender_output(model, clean, "embed")
                x_corrupt = sender_output(model, corrupt, "embed")
                delta = sender_output(model, corrupt, sender) - sender_output(model, clean, sender)
                kept = {}

                def interpolate(act, hook):
                    x = (x_corrupt + alpha * (x_clean - x_corrupt)).requires_grad_(True)
                    kept["input"] = x
                    return x

                with model.hooks(fwd_hooks=[("blocks.0.hook_resid_pre", interpolate)]):
                    logits = model(clean)
                metric = task.subset([example]).metric(logits).sum()
                grad, = torch.autograd.grad(metric, kept["input"])
                return (delta * grad).sum().item()
            """), (r"-> logits, example \d+: the mean over alpha = 1/3\.\.1 of your scores is .*, the library's EAP-IG "
                  r"score is")),
        "the logit difference, not the task's metric": (W("""
            def edge_score_at_alpha(model, task, sender, example, alpha):
                clean, corrupt = task.clean[example:example + 1], task.corrupt[example:example + 1]
                x_clean = sender_output(model, clean, "embed")
                x_corrupt = sender_output(model, corrupt, "embed")
                delta = sender_output(model, corrupt, sender) - sender_output(model, clean, sender)
                kept = {}

                def interpolate(act, hook):
                    return x_corrupt + alpha * (x_clean - x_corrupt)

                def keep(act, hook):
                    kept["final"] = act
                    act.retain_grad()
                    return act

                final_hook = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
                with model.hooks(fwd_hooks=[("blocks.0.hook_resid_pre", interpolate), (final_hook, keep)]):
                    logits = model(clean)
                metric = task.subset([example]).logit_diff(logits).sum()
                grad, = torch.autograd.grad(metric, kept["final"])
                return (delta * grad).sum().item()
            """), (r"-> logits, example \d+: your mean over alpha is .*: you took the gradient of the logit difference; "
                  r"take it of the task's own metric")),
        "returns 0.0": (W("""
            def edge_score_at_alpha(model, task, sender, example, alpha):
                return 0.0
            """), r"-> logits, example \d+: your score is 0 at every alpha"),
        "no interpolation (plain EAP)": (W("""
            def edge_score_at_alpha(model, task, sender, example, alpha):
                clean, corrupt = task.clean[example:example + 1], task.corrupt[example:example + 1]
                delta = sender_output(model, corrupt, sender) - sender_output(model, clean, sender)
                kept = {}

                def keep(act, hook):
                    kept["final"] = act
                    act.retain_grad()
                    return act

                final_hook = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
                with model.hooks(fwd_hooks=[(final_hook, keep)]):
                    logits = model(clean)
                metric = task.subset([example]).metric(logits).sum()
                grad, = torch.autograd.grad(metric, kept["final"])
                return (delta * grad).sum().item()
            """), r"every alpha gives the same score, plain EAP's .*: the input is not being interpolated"),
        "clean minus corrupted": (W("""
            def edge_score_at_alpha(model, task, sender, example, alpha):
                clean, corrupt = task.clean[example:example + 1], task.corrupt[example:example + 1]
                x_clean = sender_output(model, clean, "embed")
                x_corrupt = sender_output(model, corrupt, "embed")
                delta = sender_output(model, clean, sender) - sender_output(model, corrupt, sender)
                kept = {}

                def interpolate(act, hook):
                    return x_corrupt + alpha * (x_clean - x_corrupt)

                def keep(act, hook):
                    kept["final"] = act
                    act.retain_grad()
                    return act

                final_hook = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
                with model.hooks(fwd_hooks=[("blocks.0.hook_resid_pre", interpolate), (final_hook, keep)]):
                    logits = model(clean)
                metric = task.subset([example]).metric(logits).sum()
                grad, = torch.autograd.grad(metric, kept["final"])
                return (delta * grad).sum().item()
            """), r"the sign is flipped: the sender difference is corrupted output minus clean output"),
        "interpolates from clean towards corrupted": (W("""
            def edge_score_at_alpha(model, task, sender, example, alpha):
                clean, corrupt = task.clean[example:example + 1], task.corrupt[example:example + 1]
                x_clean = sender_output(model, clean, "embed")
                x_corrupt = sender_output(model, corrupt, "embed")
                delta = sender_output(model, corrupt, sender) - sender_output(model, clean, sender)
                kept = {}

                def interpolate(act, hook):
                    return x_clean + alpha * (x_corrupt - x_clean)

                def keep(act, hook):
                    kept["final"] = act
                    act.retain_grad()
                    return act

                final_hook = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
                with model.hooks(fwd_hooks=[("blocks.0.hook_resid_pre", interpolate), (final_hook, keep)]):
                    logits = model(clean)
                metric = task.subset([example]).metric(logits).sum()
                grad, = torch.autograd.grad(metric, kept["final"])
                return (delta * grad).sum().item()
            """), (r"you walked from the clean input towards the corrupted one \(clean \+ alpha \* \(corrupt - "
                  r"clean\)\)")),
        "returns the product, not its sum": (W("""
            def edge_score_at_alpha(model, task, sender, example, alpha):
                clean, corrupt = task.clean[example:example + 1], task.corrupt[example:example + 1]
                x_clean = sender_output(model, clean, "embed")
                x_corrupt = sender_output(model, corrupt, "embed")
                delta = sender_output(model, corrupt, sender) - sender_output(model, clean, sender)
                kept = {}

                def interpolate(act, hook):
                    return x_corrupt + alpha * (x_clean - x_corrupt)

                def keep(act, hook):
                    kept["final"] = act
                    act.retain_grad()
                    return act

                final_hook = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
                with model.hooks(fwd_hooks=[("blocks.0.hook_resid_pre", interpolate), (final_hook, keep)]):
                    logits = model(clean)
                metric = task.subset([example]).metric(logits).sum()
                grad, = torch.autograd.grad(metric, kept["final"])
                return delta * grad
            """), (r"edge_score_at_alpha\(model, task, '.*', \d+, alpha=1/3\): expected one number, got a tensor of "
                  r"shape")),
    },
    "faithfulness_of": {
        "the numerator without m(∅)": (W("""
            def faithfulness_of(model, task, circuit):
                graph = fa.EAPGraph.from_model(model)
                cut = (graph.edge_mask() & ~circuit.cpu()).float().to(model.W_E.device)
                H, R = graph.n_heads, len(graph.receivers)
                with torch.no_grad(), engine_view(model, split_qkv=True, attn_result=True, mlp_in=True):
                    store, live = [], []
                    with model.hooks(fwd_hooks=sender_outputs(store)):
                        m_empty = task.metric(model(task.corrupt)).mean().item()
                    bad = torch.stack(store)
                    m_full = task.metric(model(task.clean)).mean().item()

                    def cut_into(act, r0, r1):
                        n = graph.n_upstream[r0]
                        return act - torch.einsum("sr,sbpd->bprd", cut[:n, r0:r1], torch.stack(live[:n]) - bad[:n])

                    def heads(act, hook):
                        r0 = graph.receiver_base(hook.layer()) + "qkv".index(hook.name[-7]) * H
                        return cut_into(act, r0, r0 + H)

                    def one(r_of):
                        return lambda act, hook: cut_into(act[:, :, None], r_of(hook), r_of(hook) + 1)[:, :, 0]

                    receivers = [(lambda name: name.endswith(("hook_q_input", "hook_k_input", "hook_v_input")), heads),
                                 (lambda name: name.endswith("hook_mlp_in"), one(lambda hook: graph.receiver_base(hook.layer()) + 3 * H)),
                                 (f"blocks.{graph.n_layers - 1}.hook_resid_post", one(lambda hook: R - 1))]
                    with model.hooks(fwd_hooks=sender_outputs(live) + receivers):
                        m_c = task.metric(model(task.clean)).mean().item()
                return m_c / (m_full - m_empty)
            """), r"faithfulness_of on .*: you have .*, the library's edge patching gives .* -- the numerator lacks the empty circuit's metric"),
        "clean and corrupted swapped": (W("""
            def faithfulness_of(model, task, circuit):
                graph = fa.EAPGraph.from_model(model)
                cut = (graph.edge_mask() & circuit.cpu()).float().to(model.W_E.device)
                H, R = graph.n_heads, len(graph.receivers)
                with torch.no_grad(), engine_view(model, split_qkv=True, attn_result=True, mlp_in=True):
                    store, live = [], []
                    with model.hooks(fwd_hooks=sender_outputs(store)):
                        m_empty = task.metric(model(task.corrupt)).mean().item()
                    bad = torch.stack(store)
                    m_full = task.metric(model(task.clean)).mean().item()

                    def cut_into(act, r0, r1):
                        n = graph.n_upstream[r0]
                        return act - torch.einsum("sr,sbpd->bprd", cut[:n, r0:r1], torch.stack(live[:n]) - bad[:n])

                    def heads(act, hook):
                        r0 = graph.receiver_base(hook.layer()) + "qkv".index(hook.name[-7]) * H
                        return cut_into(act, r0, r0 + H)

                    def one(r_of):
                        return lambda act, hook: cut_into(act[:, :, None], r_of(hook), r_of(hook) + 1)[:, :, 0]

                    receivers = [(lambda name: name.endswith(("hook_q_input", "hook_k_input", "hook_v_input")), heads),
                                 (lambda name: name.endswith("hook_mlp_in"), one(lambda hook: graph.receiver_base(hook.layer()) + 3 * H)),
                                 (f"blocks.{graph.n_layers - 1}.hook_resid_post", one(lambda hook: R - 1))]
                    with model.hooks(fwd_hooks=sender_outputs(live) + receivers):
                        m_c = task.metric(model(task.clean)).mean().item()
                return (m_c - m_empty) / (m_full - m_empty)
            """), r"faithfulness_of on .* -- clean and corrupted are swapped"),
        "node patching": (W("""
            def faithfulness_of(model, task, circuit):
                graph = fa.EAPGraph.from_model(model)
                cut = (graph.edge_mask() & ~circuit.cpu().any(1, keepdim=True)).float().to(model.W_E.device)
                H, R = graph.n_heads, len(graph.receivers)
                with torch.no_grad(), engine_view(model, split_qkv=True, attn_result=True, mlp_in=True):
                    store, live = [], []
                    with model.hooks(fwd_hooks=sender_outputs(store)):
                        m_empty = task.metric(model(task.corrupt)).mean().item()
                    bad = torch.stack(store)
                    m_full = task.metric(model(task.clean)).mean().item()

                    def cut_into(act, r0, r1):
                        n = graph.n_upstream[r0]
                        return act - torch.einsum("sr,sbpd->bprd", cut[:n, r0:r1], torch.stack(live[:n]) - bad[:n])

                    def heads(act, hook):
                        r0 = graph.receiver_base(hook.layer()) + "qkv".index(hook.name[-7]) * H
                        return cut_into(act, r0, r0 + H)

                    def one(r_of):
                        return lambda act, hook: cut_into(act[:, :, None], r_of(hook), r_of(hook) + 1)[:, :, 0]

                    receivers = [(lambda name: name.endswith(("hook_q_input", "hook_k_input", "hook_v_input")), heads),
                                 (lambda name: name.endswith("hook_mlp_in"), one(lambda hook: graph.receiver_base(hook.layer()) + 3 * H)),
                                 (f"blocks.{graph.n_layers - 1}.hook_resid_post", one(lambda hook: R - 1))]
                    with model.hooks(fwd_hooks=sender_outputs(live) + receivers):
                        m_c = task.metric(model(task.clean)).mean().item()
                return (m_c - m_empty) / (m_full - m_empty)
            """), r"faithfulness_of on .* -- that is node patching"),
        "q, k and v alike": (W("""
            def faithfulness_of(model, task, circuit):
                graph = fa.EAPGraph.from_model(model)
                cut = (graph.edge_mask() & ~circuit.cpu()).float().to(model.W_E.device)
                H, R = graph.n_heads, len(graph.receivers)
                with torch.no_grad(), engine_view(model, split_qkv=True, attn_result=True, mlp_in=True):
                    store, live = [], []
                    with model.hooks(fwd_hooks=sender_outputs(store)):
                        m_empty = task.metric(model(task.corrupt)).mean().item()
                    bad = torch.stack(store)
                    m_full = task.metric(model(task.clean)).mean().item()

                    def cut_into(act, r0, r1):
                        n = graph.n_upstream[r0]
                        return act - torch.einsum("sr,sbpd->bprd", cut[:n, r0:r1], torch.stack(live[:n]) - bad[:n])

                    def heads(act, hook):
                        r0 = graph.receiver_base(hook.layer())
                        return cut_into(act, r0, r0 + H)

                    def one(r_of):
                        return lambda act, hook: cut_into(act[:, :, None], r_of(hook), r_of(hook) + 1)[:, :, 0]

                    receivers = [(lambda name: name.endswith(("hook_q_input", "hook_k_input", "hook_v_input")), heads),
                                 (lambda name: name.endswith("hook_mlp_in"), one(lambda hook: graph.receiver_base(hook.layer()) + 3 * H)),
                                 (f"blocks.{graph.n_layers - 1}.hook_resid_post", one(lambda hook: R - 1))]
                    with model.hooks(fwd_hooks=sender_outputs(live) + receivers):
                        m_c = task.metric(model(task.clean)).mean().item()
                return (m_c - m_empty) / (m_full - m_empty)
            """), r"faithfulness_of on .* -- a head's q, k and v inputs got the same treatment"),
        "the logits receiver forgotten": (W("""
            def faithfulness_of(model, task, circuit):
                graph = fa.EAPGraph.from_model(model)
                cut = (graph.edge_mask() & ~circuit.cpu()).float().to(model.W_E.device)
                H, R = graph.n_heads, len(graph.receivers)
                with torch.no_grad(), engine_view(model, split_qkv=True, attn_result=True, mlp_in=True):
                    store, live = [], []
                    with model.hooks(fwd_hooks=sender_outputs(store)):
                        m_empty = task.metric(model(task.corrupt)).mean().item()
                    bad = torch.stack(store)
                    m_full = task.metric(model(task.clean)).mean().item()

                    def cut_into(act, r0, r1):
                        n = graph.n_upstream[r0]
                        return act - torch.einsum("sr,sbpd->bprd", cut[:n, r0:r1], torch.stack(live[:n]) - bad[:n])

                    def heads(act, hook):
                        r0 = graph.receiver_base(hook.layer()) + "qkv".index(hook.name[-7]) * H
                        return cut_into(act, r0, r0 + H)

                    def one(r_of):
                        return lambda act, hook: cut_into(act[:, :, None], r_of(hook), r_of(hook) + 1)[:, :, 0]

                    receivers = [(lambda name: name.endswith(("hook_q_input", "hook_k_input", "hook_v_input")), heads),
                                 (lambda name: name.endswith("hook_mlp_in"), one(lambda hook: graph.receiver_base(hook.layer()) + 3 * H))]
                    with model.hooks(fwd_hooks=sender_outputs(live) + receivers):
                        m_c = task.metric(model(task.clean)).mean().item()
                return (m_c - m_empty) / (m_full - m_empty)
            """), r"faithfulness_of on .* -- the logits receiver is missing"),
        "only the queries patched": (W("""
            def faithfulness_of(model, task, circuit):
                graph = fa.EAPGraph.from_model(model)
                cut = (graph.edge_mask() & ~circuit.cpu()).float().to(model.W_E.device)
                H, R = graph.n_heads, len(graph.receivers)
                with torch.no_grad(), engine_view(model, split_qkv=True, attn_result=True, mlp_in=True):
                    store, live = [], []
                    with model.hooks(fwd_hooks=sender_outputs(store)):
                        m_empty = task.metric(model(task.corrupt)).mean().item()
                    bad = torch.stack(store)
                    m_full = task.metric(model(task.clean)).mean().item()

                    def cut_into(act, r0, r1):
                        n = graph.n_upstream[r0]
                        return act - torch.einsum("sr,sbpd->bprd", cut[:n, r0:r1], torch.stack(live[:n]) - bad[:n])

                    def heads(act, hook):
                        r0 = graph.receiver_base(hook.layer()) + "qkv".index(hook.name[-7]) * H
                        return cut_into(act, r0, r0 + H)

                    def one(r_of):
                        return lambda act, hook: cut_into(act[:, :, None], r_of(hook), r_of(hook) + 1)[:, :, 0]

                    receivers = [(lambda name: name.endswith("hook_q_input"), heads),
                                 (lambda name: name.endswith("hook_mlp_in"), one(lambda hook: graph.receiver_base(hook.layer()) + 3 * H)),
                                 (f"blocks.{graph.n_layers - 1}.hook_resid_post", one(lambda hook: R - 1))]
                    with model.hooks(fwd_hooks=sender_outputs(live) + receivers):
                        m_c = task.metric(model(task.clean)).mean().item()
                return (m_c - m_empty) / (m_full - m_empty)
            """), r"faithfulness_of on .* -- only the query inputs were patched"),
        "the clean run's outputs on the circuit's edges": (W("""
            def faithfulness_of(model, task, circuit):
                graph = fa.EAPGraph.from_model(model)
                cut = (graph.edge_mask() & ~circuit.cpu()).float().to(model.W_E.device)
                H, R = graph.n_heads, len(graph.receivers)
                with torch.no_grad(), engine_view(model, split_qkv=True, attn_result=True, mlp_in=True):
                    store, live = [], []
                    with model.hooks(fwd_hooks=sender_outputs(store)):
                        m_empty = task.metric(model(task.corrupt)).mean().item()
                    bad = torch.stack(store)
                    good = []
                    with model.hooks(fwd_hooks=sender_outputs(good)):
                        m_full = task.metric(model(task.clean)).mean().item()
                    good = torch.stack(good)

                    def cut_into(act, r0, r1):
                        n = graph.n_upstream[r0]
                        return act - torch.einsum("sr,sbpd->bprd", cut[:n, r0:r1], good[:n] - bad[:n])

                    def heads(act, hook):
                        r0 = graph.receiver_base(hook.layer()) + "qkv".index(hook.name[-7]) * H
                        return cut_into(act, r0, r0 + H)

                    def one(r_of):
                        return lambda act, hook: cut_into(act[:, :, None], r_of(hook), r_of(hook) + 1)[:, :, 0]

                    receivers = [(lambda name: name.endswith(("hook_q_input", "hook_k_input", "hook_v_input")), heads),
                                 (lambda name: name.endswith("hook_mlp_in"), one(lambda hook: graph.receiver_base(hook.layer()) + 3 * H)),
                                 (f"blocks.{graph.n_layers - 1}.hook_resid_post", one(lambda hook: R - 1))]
                    with model.hooks(fwd_hooks=sender_outputs(live) + receivers):
                        m_c = task.metric(model(task.clean)).mean().item()
                return (m_c - m_empty) / (m_full - m_empty)
            """), r"faithfulness_of on .* -- the circuit's edges carried the sender's output from the \*clean\* run"),
        "the correction made after the norm": (W("""
            def faithfulness_of(model, task, circuit):
                graph = fa.EAPGraph.from_model(model)
                cut = (graph.edge_mask() & ~circuit.cpu()).float().to(model.W_E.device)
                H, R = graph.n_heads, len(graph.receivers)
                with torch.no_grad(), engine_view(model, split_qkv=True, attn_result=True, mlp_in=True):
                    store, live = [], []
                    with model.hooks(fwd_hooks=sender_outputs(store)):
                        m_empty = task.metric(model(task.corrupt)).mean().item()
                    bad = torch.stack(store)
                    m_full = task.metric(model(task.clean)).mean().item()
                    seen = {}

                    def cut_into(act, r0, r1):
                        n = graph.n_upstream[r0]
                        return act - torch.einsum("sr,sbpd->bprd", cut[:n, r0:r1], torch.stack(live[:n]) - bad[:n])

                    def heads(act, hook):  # ln1 normalises the q, k and v inputs in turn
                        l = hook.layer()
                        seen[l] = seen.get(l, -1) + 1
                        r0 = graph.receiver_base(l) + seen[l] * H
                        return cut_into(act, r0, r0 + H)

                    def one(r_of):
                        return lambda act, hook: cut_into(act[:, :, None], r_of(hook), r_of(hook) + 1)[:, :, 0]

                    receivers = [(lambda name: name.endswith("ln1.hook_normalized"), heads),
                                 (lambda name: name.endswith("ln2.hook_normalized"), one(lambda hook: graph.receiver_base(hook.layer()) + 3 * H)),
                                 ("ln_final.hook_normalized", one(lambda hook: R - 1))]
                    with model.hooks(fwd_hooks=sender_outputs(live) + receivers):
                        m_c = task.metric(model(task.clean)).mean().item()
                return (m_c - m_empty) / (m_full - m_empty)
            """), r"faithfulness_of on .* -- the correction was made after the receiver's norm"),
    },
    "cpr_and_cmd": {
        "the mean of f": (W("""
            def cpr_and_cmd(fractions, f):
                return sum(f) / len(f), sum(abs(1 - v) for v in f) / len(f)
            """), r"cpr_and_cmd: the mean of f, not an area"),
        "left rectangles": (W("""
            def cpr_and_cmd(fractions, f):
                cpr = sum((fractions[i + 1] - fractions[i]) * f[i] for i in range(len(f) - 1))
                cmd = sum((fractions[i + 1] - fractions[i]) * abs(1 - f[i]) for i in range(len(f) - 1))
                return cpr, cmd
            """), r"cpr_and_cmd: left rectangles"),
        "CMD = 1 - CPR": (W("""
            def cpr_and_cmd(fractions, f):
                cpr = sum((fractions[i + 1] - fractions[i]) * (f[i] + f[i + 1]) / 2 for i in range(len(f) - 1))
                return cpr, 1 - cpr
            """), r"cpr_and_cmd: CMD is the area under \|1 - f\|: the absolute value is missing, and the area under 1 - f is just 1 - CPR"),
        "no absolute value": (W("""
            def cpr_and_cmd(fractions, f):
                cpr = sum((fractions[i + 1] - fractions[i]) * (f[i] + f[i + 1]) / 2 for i in range(len(f) - 1))
                cmd = sum((fractions[i + 1] - fractions[i]) * ((1 - f[i]) + (1 - f[i + 1])) / 2 for i in range(len(f) - 1))
                return cpr, cmd
            """), r"cpr_and_cmd: CMD is the area under \|1 - f\|: the absolute value is missing"),
        "the absolute value of the area": (W("""
            def cpr_and_cmd(fractions, f):
                cpr = sum((fractions[i + 1] - fractions[i]) * (f[i] + f[i + 1]) / 2 for i in range(len(f) - 1))
                cmd = abs(sum((fractions[i + 1] - fractions[i]) * ((1 - f[i]) + (1 - f[i + 1])) / 2 for i in range(len(f) - 1)))
                return cpr, cmd
            """), r"cpr_and_cmd: CMD is the area under \|1 - f\|: you took the absolute value of the area under 1 - f"),
        "swapped": (W("""
            def cpr_and_cmd(fractions, f):
                cpr = sum((fractions[i + 1] - fractions[i]) * (f[i] + f[i + 1]) / 2 for i in range(len(f) - 1))
                cmd = sum((fractions[i + 1] - fractions[i]) * (abs(1 - f[i]) + abs(1 - f[i + 1])) / 2 for i in range(len(f) - 1))
                return cmd, cpr
            """), r"cpr_and_cmd: cpr and cmd are swapped"),
    },
    "random_circuit": {
        "draws among every sender/receiver pair": (W("""
            def random_circuit(graph, fraction, seed):
                valid = graph.edge_mask()
                k = fa.size_to_count(fraction, valid.numel())
                chosen = torch.randperm(valid.numel(), generator=torch.Generator().manual_seed(seed))[:k]
                mask = torch.zeros(valid.numel(), dtype=torch.bool)
                mask[chosen] = True
                return mask.view(valid.shape)
            """), r"random_circuit\(graph, .*\): \d+ of your edges are not edges of the graph"),
        "int() instead of size_to_count": (W("""
            def random_circuit(graph, fraction, seed):
                valid = graph.edge_mask()
                k = int(fraction * fa.n_edges(graph))
                idx = valid.flatten().nonzero().squeeze(1)
                chosen = idx[torch.randperm(len(idx), generator=torch.Generator().manual_seed(seed))[:k]]
                mask = torch.zeros(valid.numel(), dtype=torch.bool)
                mask[chosen] = True
                return mask.view(valid.shape)
            """), r"edges, expected \d+: the library rounds"),
        "unseeded": (W("""
            def random_circuit(graph, fraction, seed):
                valid = graph.edge_mask()
                k = fa.size_to_count(fraction, fa.n_edges(graph))
                idx = valid.flatten().nonzero().squeeze(1)
                chosen = idx[torch.randperm(len(idx))[:k]]
                mask = torch.zeros(valid.numel(), dtype=torch.bool)
                mask[chosen] = True
                return mask.view(valid.shape)
            """), r"random_circuit: two calls with seed 0 give different circuits"),
        "the first k edges": (W("""
            def random_circuit(graph, fraction, seed):
                valid = graph.edge_mask()
                k = fa.size_to_count(fraction, fa.n_edges(graph))
                idx = valid.flatten().nonzero().squeeze(1)[:k]
                mask = torch.zeros(valid.numel(), dtype=torch.bool)
                mask[idx] = True
                return mask.view(valid.shape)
            """), r"random_circuit: seeds 0 and 1 give the same circuit"),
        "a random sender first": (W("""
            def random_circuit(graph, fraction, seed):
                valid = graph.edge_mask()
                k = fa.size_to_count(fraction, fa.n_edges(graph))
                g = torch.Generator().manual_seed(seed)
                senders = [s for s in range(valid.shape[0]) if bool(valid[s].any())]
                picked = set()
                while len(picked) < k:
                    s = senders[int(torch.randint(len(senders), (1,), generator=g))]
                    r = valid[s].nonzero().squeeze(1)
                    picked.add((s, int(r[int(torch.randint(len(r), (1,), generator=g))])))
                mask = torch.zeros_like(valid)
                for s, r in picked:
                    mask[s, r] = True
                return mask
            """), r"random_circuit: not uniform over the graph's edges"),
    },
    "overlap_against_chance": {
        "overlap coefficient": (W("""
            def overlap_against_chance(a, b, n, draws, seed):
                a, b = set(a), set(b)
                jac = len(a & b) / min(len(a), len(b))
                g = torch.Generator().manual_seed(seed)
                rand = []
                for _ in range(draws):
                    ra, rb = set(torch.randperm(n, generator=g)[:len(a)].tolist()), set(torch.randperm(n, generator=g)[:len(b)].tolist())
                    rand.append(len(ra & rb) / len(ra | rb))
                return jac, sum(rand) / draws, (1 + sum(r >= jac - 1e-12 for r in rand)) / (1 + draws)
            """), r"your jaccard is .*; that is the overlap coefficient"),
        "random sets of one size": (W("""
            def overlap_against_chance(a, b, n, draws, seed):
                a, b = set(a), set(b)
                jac = len(a & b) / len(a | b)
                g = torch.Generator().manual_seed(seed)
                rand = []
                for _ in range(draws):
                    ra, rb = set(torch.randperm(n, generator=g)[:len(a)].tolist()), set(torch.randperm(n, generator=g)[:len(a)].tolist())
                    rand.append(len(ra & rb) / len(ra | rb))
                return jac, sum(rand) / draws, (1 + sum(r >= jac - 1e-12 for r in rand)) / (1 + draws)
            """), r"your chance .* is that of two random sets of the same size"),
        "p counts only larger overlaps": (W("""
            def overlap_against_chance(a, b, n, draws, seed):
                a, b = set(a), set(b)
                jac = len(a & b) / len(a | b)
                g = torch.Generator().manual_seed(seed)
                rand = []
                for _ in range(draws):
                    ra, rb = set(torch.randperm(n, generator=g)[:len(a)].tolist()), set(torch.randperm(n, generator=g)[:len(b)].tolist())
                    rand.append(len(ra & rb) / len(ra | rb))
                return jac, sum(rand) / draws, (1 + sum(r > jac + 1e-12 for r in rand)) / (1 + draws)
            """), r"counts only random overlaps \*larger\* than the observed one"),
        "p counts the overlaps below": (W("""
            def overlap_against_chance(a, b, n, draws, seed):
                a, b = set(a), set(b)
                jac = len(a & b) / len(a | b)
                g = torch.Generator().manual_seed(seed)
                rand = []
                for _ in range(draws):
                    ra, rb = set(torch.randperm(n, generator=g)[:len(a)].tolist()), set(torch.randperm(n, generator=g)[:len(b)].tolist())
                    rand.append(len(ra & rb) / len(ra | rb))
                return jac, sum(rand) / draws, sum(r < jac for r in rand) / draws
            """), r"counts the random overlaps \*below\* the observed one"),
    },
}
