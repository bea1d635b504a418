"""The usual wrong answers to notebook 00_start_here's exercises and the message its check must give each
(tests/test_learner_notebooks.py runs them).

{exercise function: {wrong answer: (source of the whole wrong def, regex the check's message matches)}}
"""
from learner_wrong_common import W

WRONG = {
    "head_output": {
        "adds b_O": (W("""
            def head_output(cache, model, layer, head):
                return cache[f"blocks.{layer}.attn.hook_z"][:, :, head] @ model.W_O[layer, head] + model.b_O[layer]
            """), r"the output of a0\.h1: you added the layer's bias b_O"),
        "the whole layer's output": (W("""
            def head_output(cache, model, layer, head):
                return cache[f"blocks.{layer}.hook_attn_out"]
            """), r"the whole layer's attention output"),
        "hook_v instead of hook_z": (W("""
            def head_output(cache, model, layer, head):
                return cache[f"blocks.{layer}.attn.hook_v"][:, :, head] @ model.W_O[layer, head]
            """), r"you used hook_v"),
        "head 0 hard-coded": (W("""
            def head_output(cache, model, layer, head):
                return cache[f"blocks.{layer}.attn.hook_z"][:, :, 0] @ model.W_O[layer, 0]
            """), r"you computed the output of a0\.h0, not a0\.h1: use the `layer` and `head` arguments"),
        "no W_O": (W("""
            def head_output(cache, model, layer, head):
                return cache[f"blocks.{layer}.attn.hook_z"][:, :, head]
            """), r"expected shape"),
    },
    "zero_head_hook": {
        "zeros every head": (W("""
            def zero_head_hook(z, hook, head):
                return torch.zeros_like(z)
            """), r"zero_head_hook with head=0: .* values differ.* -- your result is all zeros"),
        "forgets to return z": (W("""
            def zero_head_hook(z, hook, head):
                z = z.clone()
                z[:, :, head, :] = 0.0
            """), r"zero_head_hook returned None: return the \(modified\) activation"),
        "zeros a position (z[:, head])": (W("""
            def zero_head_hook(z, hook, head):
                z = z.clone()
                z[:, head] = 0.0
                return z
            """), (r"zero_head_hook with head=0: you zeroed position 0 of every head \(z\[:, head\] indexes the pos "
                  r"dimension\): .* z\[:, :, head\] = 0")),
    },
    "logit_diff": {
        "logits[:, -1] instead of end_pos": (W("""
            def logit_diff(logits, task):
                final = logits[:, -1]
                right = final.gather(1, task.answers[:, None])[:, 0]
                return right - final.gather(1, task.wrong).mean(1)
            """), (r"padded to different lengths.*you read the last position \(logits\[:, -1\]\); read each "
                  r"example's task\.end_pos")),
        "end_pos[0] for every example": (W("""
            def logit_diff(logits, task):
                final = logits[:, int(task.end_pos[0])]
                right = final.gather(1, task.answers[:, None])[:, 0]
                return right - final.gather(1, task.wrong).mean(1)
            """), r"you read position task\.end_pos\[0\] for every example"),
        "first wrong answer only": (W("""
            def logit_diff(logits, task):
                final = logits[torch.arange(len(task)), task.end_pos]
                return final.gather(1, task.answers[:, None])[:, 0] - final.gather(1, task.wrong[:, :1])[:, 0]
            """), r"you used only the first wrong answer"),
        "sum of the wrong answers": (W("""
            def logit_diff(logits, task):
                final = logits[torch.arange(len(task)), task.end_pos]
                return final.gather(1, task.answers[:, None])[:, 0] - final.gather(1, task.wrong).sum(1)
            """), r"you subtracted the sum of the wrong answers' logits"),
        "probabilities": (W("""
            def logit_diff(logits, task):
                final = logits[torch.arange(len(task)), task.end_pos].softmax(-1)
                return final.gather(1, task.answers[:, None])[:, 0] - final.gather(1, task.wrong).mean(1)
            """), r"you took probabilities \(a softmax\)"),
        "wrong minus answer": (W("""
            def logit_diff(logits, task):
                final = logits[torch.arange(len(task)), task.end_pos]
                return final.gather(1, task.wrong).mean(1) - final.gather(1, task.answers[:, None])[:, 0]
            """), r"the sign is flipped"),
        "mean over the batch": (W("""
            def logit_diff(logits, task):
                final = logits[torch.arange(len(task)), task.end_pos]
                return (final.gather(1, task.answers[:, None])[:, 0] - final.gather(1, task.wrong).mean(1)).mean()
            """), r"you returned a single number"),
    },
    "patch_mlp_output": {
        "clean and corrupted swapped": (W("""
            def patch_mlp_output(model, clean, corrupt, layer):
                name = f"blocks.{layer}.hook_mlp_out"
                _, cache = model.run_with_cache(clean, names_filter=name)
                with model.hooks(fwd_hooks=[(name, lambda act, hook: cache[name])]):
                    return model(corrupt)
            """), r"clean and corrupted are swapped -- cache blocks\.0\.hook_mlp_out on `corrupt`"),
        "hook returns the activation": (W("""
            def patch_mlp_output(model, clean, corrupt, layer):
                name = f"blocks.{layer}.hook_mlp_out"
                _, cache = model.run_with_cache(corrupt, names_filter=name)
                with model.hooks(fwd_hooks=[(name, lambda act, hook: act)]):
                    return model(clean)
            """), r"your logits equal the clean run's: the patch changed nothing"),
        "runs the corrupted tokens": (W("""
            def patch_mlp_output(model, clean, corrupt, layer):
                return model(corrupt)
            """), r"your logits equal the corrupted run's"),
        "last position only": (W("""
            def patch_mlp_output(model, clean, corrupt, layer):
                name = f"blocks.{layer}.hook_mlp_out"
                _, cache = model.run_with_cache(corrupt, names_filter=name)

                def hook(act, hook):
                    act = act.clone()
                    act[:, -1] = cache[name][:, -1]
                    return act

                with model.hooks(fwd_hooks=[(name, hook)]):
                    return model(clean)
            """), r"you patched only the last position"),
        "layer 0 hard-coded": (W("""
            def patch_mlp_output(model, clean, corrupt, layer):
                name = "blocks.0.hook_mlp_out"
                _, cache = model.run_with_cache(corrupt, names_filter=name)
                with model.hooks(fwd_hooks=[(name, lambda act, hook: cache[name])]):
                    return model(clean)
            """), r"logits with MLP 1 patched: you patched MLP 0 instead of MLP 1: use the `layer` argument"),
        "final position's logits only": (W("""
            def patch_mlp_output(model, clean, corrupt, layer):
                name = f"blocks.{layer}.hook_mlp_out"
                _, cache = model.run_with_cache(corrupt, names_filter=name)
                with model.hooks(fwd_hooks=[(name, lambda act, hook: cache[name])]):
                    return model(clean)[:, -1]
            """), r"the pos dimension \(dim 1, of size \d+\) is missing"),
    },
    "could_have_failed": {
        "reads the result": (W("""
            def could_have_failed(row):
                return row["holds"]
            """), r"you said True: a control with fewer than 20 distinct draws"),
        "ignores the draws": (W("""
            def could_have_failed(row):
                lo, hi = row["range"]
                room = 0.05 * (hi - lo)
                return lo + room <= row["baseline"] <= hi - room and (row["interval"][0] > 0 or row["interval"][1] < 0)
            """), r"fewer than 20 distinct draws"),
        "a baseline of 0 is fine": (W("""
            def could_have_failed(row):
                lo, hi = row["range"]
                return row["draws"] >= 20 and row["baseline"] < hi and (row["interval"][0] > 0 or row["interval"][1] < 0)
            """), r"a baseline at its floor"),
        "only a positive margin counts": (W("""
            def could_have_failed(row):
                lo, hi = row["range"]
                room = 0.05 * (hi - lo)
                return row["draws"] >= 20 and lo + room <= row["baseline"] <= hi - room and row["interval"][0] > 0
            """), r"you said False: every power check passes .* whichever way it came out"),
        "ignores the noise": (W("""
            def could_have_failed(row):
                lo, hi = row["range"]
                room = 0.05 * (hi - lo)
                return row["draws"] >= 20 and lo + room <= row["baseline"] <= hi - room
            """), r"within the run's own noise"),
    },
}
