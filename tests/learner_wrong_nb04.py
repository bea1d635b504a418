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
        "m(C) / m(M)": (W("""
            def faithfulness_of(model, task, circuit):
                full = fa.full_circuit(fa.EAPGraph.from_model(model))
                m_c, m_full, m_empty = fa.patched_metric(model, task, torch.stack([circuit, full, torch.zeros_like(full)])).tolist()
                return m_c / m_full
            """), r"faithfulness_of: that is m\(C\) / m\(M\): subtract the empty circuit's metric"),
        "1 - f": (W("""
            def faithfulness_of(model, task, circuit):
                full = fa.full_circuit(fa.EAPGraph.from_model(model))
                m_c, m_full, m_empty = fa.patched_metric(model, task, torch.stack([circuit, full, torch.zeros_like(full)])).tolist()
                return (m_full - m_c) / (m_full - m_empty)
            """), r"faithfulness_of: that is 1 - f: the numerator is m\(C\) - m\(∅\)"),
        "m(C) itself": (W("""
            def faithfulness_of(model, task, circuit):
                full = fa.full_circuit(fa.EAPGraph.from_model(model))
                m_c, m_full, m_empty = fa.patched_metric(model, task, torch.stack([circuit, full, torch.zeros_like(full)])).tolist()
                return m_c
            """), r"faithfulness_of: that is m\(C\) itself"),
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
            """), r"cpr_and_cmd: CMD is the area under \|1 - f\|, not 1 - CPR"),
        "no absolute value": (W("""
            def cpr_and_cmd(fractions, f):
                cpr = sum((fractions[i + 1] - fractions[i]) * (f[i] + f[i + 1]) / 2 for i in range(len(f) - 1))
                cmd = sum((fractions[i + 1] - fractions[i]) * ((1 - f[i]) + (1 - f[i + 1])) / 2 for i in range(len(f) - 1))
                return cpr, cmd
            """), r"cpr_and_cmd: CMD is the area under \|1 - f\|(: the absolute value is missing|, not 1 - CPR)"),
        "swapped": (W("""
            def cpr_and_cmd(fractions, f):
                cpr = sum((fractions[i + 1] - fractions[i]) * (f[i] + f[i + 1]) / 2 for i in range(len(f) - 1))
                cmd = sum((fractions[i + 1] - fractions[i]) * (abs(1 - f[i]) + abs(1 - f[i + 1])) / 2 for i in range(len(f) - 1))
                return cmd, cpr
            """), r"cpr_and_cmd: cpr and cmd are swapped"),
    },
}
