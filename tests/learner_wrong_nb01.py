"""The usual wrong answers to notebook 01_greater_than's exercises and the message its check must give each
(tests/test_learner_notebooks.py runs them).

{exercise function: {wrong answer: (source of the whole wrong def, regex the check's message matches)}}
"""
from learner_wrong_common import W

WRONG = {
    "prob_diff": {
        "softmax over the year tokens only": (W("""
            def prob_diff(logits, task):
                probs = task.final_logits(logits).float()[:, task.year_ids].softmax(-1)
                above = torch.arange(100)[None, :] > task.yy[:, None]
                return (probs * above).sum(1) - (probs * ~above).sum(1)
            """), r"you took the softmax over the 100 year tokens only: take it over the whole vocabulary"),
        ">= YY counted as correct": (W("""
            def prob_diff(logits, task):
                probs = task.final_logits(logits).float().softmax(-1)[:, task.year_ids]
                above = torch.arange(100)[None, :] >= task.yy[:, None]
                return (probs * above).sum(1) - (probs * ~above).sum(1)
            """), r"YY itself counts as a wrong answer: correct years are strictly greater than YY"),
        "below minus above": (W("""
            def prob_diff(logits, task):
                probs = task.final_logits(logits).float().softmax(-1)[:, task.year_ids]
                above = torch.arange(100)[None, :] > task.yy[:, None]
                return (probs * ~above).sum(1) - (probs * above).sum(1)
            """), r"probability difference per example: .* -- the sign is flipped"),
        "mean over the prompts": (W("""
            def prob_diff(logits, task):
                probs = task.final_logits(logits).float().softmax(-1)[:, task.year_ids]
                above = torch.arange(100)[None, :] > task.yy[:, None]
                return ((probs * above).sum(1) - (probs * ~above).sum(1)).mean()
            """), r"expected shape \(\d+,\), got \(\) -- you returned a single number"),
        "logits[:, -1] instead of END": (W("""
            def prob_diff(logits, task):
                probs = logits[:, -1].float().softmax(-1)[:, task.year_ids]
                above = torch.arange(100)[None, :] > task.yy[:, None]
                return (probs * above).sum(1) - (probs * ~above).sum(1)
            """), (r"padded to different lengths .*: you read the last position \(logits\[:, -1\]\); read each "
                  r"prompt's END")),
    },
    "direct_path_patch": {
        "hook never returns the patched residual": (W("""
            def direct_path_patch(model, task, sender):
                end = task.end_pos
                delta = component_output(model, task.corrupt, sender, end) - component_output(model, task.clean, sender, end)
                rows = torch.arange(len(end))

                def add_delta(resid, hook):
                    patched = resid.clone()
                    patched[rows, end] += delta

                last = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
                with torch.no_grad(), model.hooks(fwd_hooks=[(last, add_delta)]):
                    return task.metric(model(task.clean))
            """), r"your result equals the clean run's metric: the hook did not change anything"),
        "delta added at the first residual stream": (W("""
            def direct_path_patch(model, task, sender):
                end = task.end_pos
                delta = component_output(model, task.corrupt, sender, end) - component_output(model, task.clean, sender, end)
                rows = torch.arange(len(end))

                def add_delta(resid, hook):
                    resid = resid.clone()
                    resid[rows, end] += delta
                    return resid

                with torch.no_grad(), model.hooks(fwd_hooks=[("blocks.0.hook_resid_pre", add_delta)]):
                    return task.metric(model(task.clean))
            """), (r"metric per prompt with m\d+ -> logits patched at END: you added the difference at "
                  r"blocks\.0\.hook_resid_pre, the model's input: then every layer sees it")),
        "returns the logits": (W("""
            def direct_path_patch(model, task, sender):
                end = task.end_pos
                delta = component_output(model, task.corrupt, sender, end) - component_output(model, task.clean, sender, end)
                rows = torch.arange(len(end))

                def add_delta(resid, hook):
                    resid = resid.clone()
                    resid[rows, end] += delta
                    return resid

                last = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
                with torch.no_grad(), model.hooks(fwd_hooks=[(last, add_delta)]):
                    return model(task.clean)
            """), r"expected shape \(\d+,\), got \(\d+, \d+, \d+\)"),
        "forgets to return": (W("""
            def direct_path_patch(model, task, sender):
                end = task.end_pos
                delta = component_output(model, task.corrupt, sender, end) - component_output(model, task.clean, sender, end)
                rows = torch.arange(len(end))

                def add_delta(resid, hook):
                    resid = resid.clone()
                    resid[rows, end] += delta
                    return resid

                last = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
                with torch.no_grad(), model.hooks(fwd_hooks=[(last, add_delta)]):
                    metric = task.metric(model(task.clean))
            """), r"direct_path_patch returned None: return the metric per prompt"),
        "clean minus corrupted": (W("""
            def direct_path_patch(model, task, sender):
                end = task.end_pos
                delta = component_output(model, task.clean, sender, end) - component_output(model, task.corrupt, sender, end)
                rows = torch.arange(len(end))

                def add_delta(resid, hook):
                    resid = resid.clone()
                    resid[rows, end] += delta
                    return resid

                last = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
                with torch.no_grad(), model.hooks(fwd_hooks=[(last, add_delta)]):
                    return task.metric(model(task.clean))
            """), (r"metric per prompt with m\d+ -> logits patched at END: the sign is flipped: the difference to add "
                  r"is the corrupted output minus the clean one")),
        "replaces the residual by the corrupted output": (W("""
            def direct_path_patch(model, task, sender):
                end = task.end_pos
                corrupted = component_output(model, task.corrupt, sender, end)
                rows = torch.arange(len(end))

                def add_delta(resid, hook):
                    resid = resid.clone()
                    resid[rows, end] = corrupted
                    return resid

                last = f"blocks.{model.cfg.n_layers - 1}.hook_resid_post"
                with torch.no_grad(), model.hooks(fwd_hooks=[(last, add_delta)]):
                    return task.metric(model(task.clean))
            """), (r"metric per prompt with m\d+ -> logits patched at END: you replaced the residual stream at END by "
                  r"the sender's corrupted output \(`=`\): add the difference to it \(`\+=`\)")),
        "activation patching of the sender (every path)": (W("""
            def direct_path_patch(model, task, sender):
                name = f"blocks.{sender[1:]}.hook_mlp_out"
                _, cache = model.run_with_cache(task.corrupt, names_filter=name)
                with torch.no_grad(), model.hooks(fwd_hooks=[(name, lambda act, hook: cache[name])]):
                    return task.metric(model(task.clean))
            """), (r"with m0 -> logits patched at END: you patched the sender's output for every path \(activation "
                  r"patching\); path patching adds its change only to the final residual stream")),
    },
    "path_patch_to_mlp": {
        "clean minus corrupted": (W("""
            def path_patch_to_mlp(model, task, sender, receiver):
                from tutorial_lib.methods.lens import component_output
                layer = int(receiver[1:])
                end, rows = task.end_pos, torch.arange(len(task.end_pos))
                delta = component_output(model, task.clean, sender, end) - component_output(model, task.corrupt, sender, end)
                with torch.no_grad():
                    _, cache = model.run_with_cache(task.clean, names_filter=f"blocks.{layer}.hook_resid_mid")
                    resid = cache[f"blocks.{layer}.hook_resid_mid"].clone()
                    resid[rows, end] += delta
                    block = model.blocks[layer]
                    new_out = block.mlp(block.ln2(resid))
                    with model.hooks(fwd_hooks=[(f"blocks.{layer}.hook_mlp_out", lambda out, hook: new_out)]):
                        return task.metric(model(task.clean))
            """), r"the sign is flipped: the change to add is corrupted minus clean"),
        "delta added to hook_resid_mid": (W("""
            def path_patch_to_mlp(model, task, sender, receiver):
                from tutorial_lib.methods.lens import component_output
                layer = int(receiver[1:])
                end, rows = task.end_pos, torch.arange(len(task.end_pos))
                delta = component_output(model, task.corrupt, sender, end) - component_output(model, task.clean, sender, end)

                def add(resid, hook):
                    resid = resid.clone()
                    resid[rows, end] += delta
                    return resid

                with torch.no_grad(), model.hooks(fwd_hooks=[(f"blocks.{layer}.hook_resid_mid", add)]):
                    return task.metric(model(task.clean))
            """), r"you added the change to hook_resid_mid, so every component after it saw"),
        "delta added to hook_resid_pre": (W("""
            def path_patch_to_mlp(model, task, sender, receiver):
                from tutorial_lib.methods.lens import component_output
                layer = int(receiver[1:])
                end, rows = task.end_pos, torch.arange(len(task.end_pos))
                delta = component_output(model, task.corrupt, sender, end) - component_output(model, task.clean, sender, end)

                def add(resid, hook):
                    resid = resid.clone()
                    resid[rows, end] += delta
                    return resid

                with torch.no_grad(), model.hooks(fwd_hooks=[(f"blocks.{layer}.hook_resid_pre", add)]):
                    return task.metric(model(task.clean))
            """), r"you added the change to the receiver's hook_resid_pre"),
        "LayerNorm scale kept clean": (W("""
            def path_patch_to_mlp(model, task, sender, receiver):
                from tutorial_lib.methods.lens import component_output
                layer = int(receiver[1:])
                end, rows = task.end_pos, torch.arange(len(task.end_pos))
                delta = component_output(model, task.corrupt, sender, end) - component_output(model, task.clean, sender, end)
                mid, scale = f"blocks.{layer}.hook_resid_mid", f"blocks.{layer}.ln2.hook_scale"
                with torch.no_grad():
                    _, cache = model.run_with_cache(task.clean, names_filter=lambda n: n in (mid, scale))
                    resid = cache[mid].clone()
                    resid[rows, end] += delta
                    block = model.blocks[layer]
                    x = (resid - resid.mean(-1, keepdim=True)) / cache[scale]
                    if hasattr(block.ln2, "w"):
                        x = x * block.ln2.w + block.ln2.b
                    new_out = block.mlp(x)
                    with model.hooks(fwd_hooks=[(f"blocks.{layer}.hook_mlp_out", lambda out, hook: new_out)]):
                        return task.metric(model(task.clean))
            """), r"the LayerNorm scale was kept at the clean run's value: recompute ln2"),
        "sender patched at every position": (W("""
            def path_patch_to_mlp(model, task, sender, receiver):
                from tutorial_lib.methods.lens import component_output
                layer = int(receiver[1:])
                end = task.end_pos
                delta = torch.stack([component_output(model, task.corrupt, sender, torch.full_like(end, p))
                                     - component_output(model, task.clean, sender, torch.full_like(end, p))
                                     for p in range(task.clean.shape[1])], 1)
                with torch.no_grad():
                    _, cache = model.run_with_cache(task.clean, names_filter=f"blocks.{layer}.hook_resid_mid")
                    resid = cache[f"blocks.{layer}.hook_resid_mid"] + delta
                    block = model.blocks[layer]
                    new_out = block.mlp(block.ln2(resid))
                    with model.hooks(fwd_hooks=[(f"blocks.{layer}.hook_mlp_out", lambda out, hook: new_out)]):
                        return task.metric(model(task.clean))
            """), r"you patched the sender at every position: only END carries the change"),
        "hook rebinds instead of returning": (W("""
            def path_patch_to_mlp(model, task, sender, receiver):
                from tutorial_lib.methods.lens import component_output
                layer = int(receiver[1:])
                end, rows = task.end_pos, torch.arange(len(task.end_pos))
                delta = component_output(model, task.corrupt, sender, end) - component_output(model, task.clean, sender, end)
                with torch.no_grad():
                    _, cache = model.run_with_cache(task.clean, names_filter=f"blocks.{layer}.hook_resid_mid")
                    resid = cache[f"blocks.{layer}.hook_resid_mid"].clone()
                    resid[rows, end] += delta
                    block = model.blocks[layer]
                    new_out = block.mlp(block.ln2(resid))

                    def replace(out, hook):
                        out = new_out

                    with model.hooks(fwd_hooks=[(f"blocks.{layer}.hook_mlp_out", replace)]):
                        return task.metric(model(task.clean))
            """), r"your result equals the clean run's metric: the MLP's new output never reached the model"),
    },
    "end_search": {
        "step 1 only": (W("""
            def end_search(model, task, threshold):
                from tutorial_lib.methods.path_discovery import discover_step
                from tutorial_lib.methods.path_patching import top_senders
                return set(top_senders(discover_step(model, task, "logits", sender_position="END", progress=False),
                                       threshold=threshold, sign="negative"))
            """), r"you returned step 1's senders only"),
        "a list of (name, effect) pairs": (W("""
            def end_search(model, task, threshold):
                from tutorial_lib.methods.path_discovery import discover_step
                from tutorial_lib.methods.path_patching import top_senders
                step = discover_step(model, task, "logits", sender_position="END", progress=False)
                return [(c, step.effects[c]) for c in top_senders(step, threshold=threshold, sign="negative")]
            """), r"end_search should return a set of component names"),
        "step 2's finds only": (W("""
            def end_search(model, task, threshold):
                from tutorial_lib.methods.path_discovery import discover_step
                from tutorial_lib.methods.path_patching import top_senders
                first = set(top_senders(discover_step(model, task, "logits", sender_position="END", progress=False),
                                        threshold=threshold, sign="negative"))
                found = set()
                for m in [c for c in first if c.startswith("m")]:
                    found |= set(top_senders(discover_step(model, task, m, sender_position="END", progress=False),
                                             threshold=threshold, sign="negative"))
                return found
            """), (r"you returned only what step 2 found: add step 1's own senders \(the senders into the logits\) too "
                  r"-- missing \[")),
        "no threshold": (W("""
            def end_search(model, task, threshold):
                from tutorial_lib.methods.path_discovery import discover_step
                from tutorial_lib.methods.path_patching import top_senders
                found = set(top_senders(discover_step(model, task, "logits", sender_position="END", progress=False), sign="negative"))
                for m in [c for c in found if c.startswith("m")]:
                    found |= set(top_senders(discover_step(model, task, m, sender_position="END", progress=False), sign="negative"))
                return found
            """), (r"you kept senders whose effects are below the threshold \(\[.*\]\): pass threshold=threshold to "
                  r"top_senders")),
        "both signs kept": (W("""
            def end_search(model, task, threshold):
                from tutorial_lib.methods.path_discovery import discover_step
                from tutorial_lib.methods.path_patching import top_senders
                found = set(top_senders(discover_step(model, task, "logits", sender_position="END", progress=False),
                                        threshold=threshold))
                for m in [c for c in found if c.startswith("m")]:
                    found |= set(top_senders(discover_step(model, task, m, sender_position="END", progress=False),
                                             threshold=threshold))
                return found
            """), (r"whose effects are positive \(patching them \*raises\* the metric\): keep only senders whose path "
                  r"lowers it")),
        "step 2 into the strongest MLP only": (W("""
            def end_search(model, task, threshold):
                from tutorial_lib.methods.path_discovery import discover_step
                from tutorial_lib.methods.path_patching import top_senders
                first = top_senders(discover_step(model, task, "logits", sender_position="END", progress=False),
                                    threshold=threshold, sign="negative")
                found = set(first)
                m = next(c for c in first if c.startswith("m"))
                found |= set(top_senders(discover_step(model, task, m, sender_position="END", progress=False),
                                         threshold=threshold, sign="negative"))
                return found
            """), r"you ran step 2 into m\d+ only: run a step into every MLP that step 1 found"),
        "step 2 at YY": (W("""
            def end_search(model, task, threshold):
                from tutorial_lib.methods.path_discovery import discover_step
                from tutorial_lib.methods.path_patching import top_senders
                found = set(top_senders(discover_step(model, task, "logits", sender_position="END", progress=False),
                                        threshold=threshold, sign="negative"))
                for m in [c for c in found if c.startswith("m")]:
                    found |= set(top_senders(discover_step(model, task, m, sender_position="YY", progress=False),
                                             threshold=threshold, sign="negative"))
                return found
            """), r'you ran step 2 with the senders at YY \(sender_position="YY"\)'),
    },
    "sufficiency": {
        "corrupts the circuit (necessity)": (W("""
            def sufficiency(model, task, components):
                keep = set(components)
                L = model.cfg.n_layers
                names = ["hook_embed"] + [f"blocks.{l}.attn.hook_z" for l in range(L)] + [f"blocks.{l}.hook_mlp_out" for l in range(L)]
                _, corrupt_cache = model.run_with_cache(task.corrupt, names_filter=lambda n: n in names)

                def hook(act, hook):
                    act, old = act.clone(), corrupt_cache[hook.name]
                    if hook.name == "hook_embed":
                        return old if "embed" in keep else act
                    l = int(hook.name.split(".")[1])
                    if hook.name.endswith("hook_mlp_out"):
                        return old if f"m{l}" in keep else act
                    for h in range(model.cfg.n_heads):
                        if f"a{l}.h{h}" in keep:
                            act[:, :, h] = old[:, :, h]
                    return act

                with torch.no_grad(), model.hooks(fwd_hooks=[(n, hook) for n in names]):
                    return task.metric(model(task.clean))
            """), r"you corrupted the circuit and kept the rest clean \(that is the necessity test\)"),
        "never corrupts the embedding": (W("""
            def sufficiency(model, task, components):
                keep = set(components)
                L = model.cfg.n_layers
                names = [f"blocks.{l}.attn.hook_z" for l in range(L)] + [f"blocks.{l}.hook_mlp_out" for l in range(L)]
                _, corrupt_cache = model.run_with_cache(task.corrupt, names_filter=lambda n: n in names)

                def hook(act, hook):
                    act, old = act.clone(), corrupt_cache[hook.name]
                    l = int(hook.name.split(".")[1])
                    if hook.name.endswith("hook_mlp_out"):
                        return act if f"m{l}" in keep else old
                    for h in range(model.cfg.n_heads):
                        if f"a{l}.h{h}" not in keep:
                            act[:, :, h] = old[:, :, h]
                    return act

                with torch.no_grad(), model.hooks(fwd_hooks=[(n, hook) for n in names]):
                    return task.metric(model(task.clean))
            """), r"the embedding was not corrupted: when 'embed' is not in components"),
        "always corrupts the embedding": (W("""
            def sufficiency(model, task, components):
                keep = set(components)
                L = model.cfg.n_layers
                names = ["hook_embed"] + [f"blocks.{l}.attn.hook_z" for l in range(L)] + [f"blocks.{l}.hook_mlp_out" for l in range(L)]
                _, corrupt_cache = model.run_with_cache(task.corrupt, names_filter=lambda n: n in names)

                def hook(act, hook):
                    act, old = act.clone(), corrupt_cache[hook.name]
                    if hook.name == "hook_embed":
                        return old
                    l = int(hook.name.split(".")[1])
                    if hook.name.endswith("hook_mlp_out"):
                        return act if f"m{l}" in keep else old
                    for h in range(model.cfg.n_heads):
                        if f"a{l}.h{h}" not in keep:
                            act[:, :, h] = old[:, :, h]
                    return act

                with torch.no_grad(), model.hooks(fwd_hooks=[(n, hook) for n in names]):
                    return task.metric(model(task.clean))
            """), r"you corrupted the embedding even though 'embed' is in components"),
        "heads left clean": (W("""
            def sufficiency(model, task, components):
                keep = set(components)
                L = model.cfg.n_layers
                names = ["hook_embed"] + [f"blocks.{l}.hook_mlp_out" for l in range(L)]
                _, corrupt_cache = model.run_with_cache(task.corrupt, names_filter=lambda n: n in names)

                def hook(act, hook):
                    act, old = act.clone(), corrupt_cache[hook.name]
                    if hook.name == "hook_embed":
                        return act if "embed" in keep else old
                    l = int(hook.name.split(".")[1])
                    return act if f"m{l}" in keep else old

                with torch.no_grad(), model.hooks(fwd_hooks=[(n, hook) for n in names]):
                    return task.metric(model(task.clean))
            """), (r"metric per prompt with only \[.*\] clean: the heads outside the circuit were not corrupted: every "
                  r"head not in components must take its output")),
        "minus the metric": (W("""
            def sufficiency(model, task, components):
                keep = set(components)
                L = model.cfg.n_layers
                names = ["hook_embed"] + [f"blocks.{l}.attn.hook_z" for l in range(L)] + [f"blocks.{l}.hook_mlp_out" for l in range(L)]
                _, corrupt_cache = model.run_with_cache(task.corrupt, names_filter=lambda n: n in names)

                def hook(act, hook):
                    act, old = act.clone(), corrupt_cache[hook.name]
                    if hook.name == "hook_embed":
                        return act if "embed" in keep else old
                    l = int(hook.name.split(".")[1])
                    if hook.name.endswith("hook_mlp_out"):
                        return act if f"m{l}" in keep else old
                    for h in range(model.cfg.n_heads):
                        if f"a{l}.h{h}" not in keep:
                            act[:, :, h] = old[:, :, h]
                    return act

                with torch.no_grad(), model.hooks(fwd_hooks=[(n, hook) for n in names]):
                    return -task.metric(model(task.clean))
            """), r"clean: \d+ of \d+ values differ.* -- the sign is flipped"),
        "MLPs never corrupted": (W("""
            def sufficiency(model, task, components):
                keep = set(components)
                L = model.cfg.n_layers
                names = ["hook_embed"] + [f"blocks.{l}.attn.hook_z" for l in range(L)]
                _, corrupt_cache = model.run_with_cache(task.corrupt, names_filter=lambda n: n in names)

                def hook(act, hook):
                    act, old = act.clone(), corrupt_cache[hook.name]
                    if hook.name == "hook_embed":
                        return act if "embed" in keep else old
                    l = int(hook.name.split(".")[1])
                    for h in range(model.cfg.n_heads):
                        if f"a{l}.h{h}" not in keep:
                            act[:, :, h] = old[:, :, h]
                    return act

                with torch.no_grad(), model.hooks(fwd_hooks=[(n, hook) for n in names]):
                    return task.metric(model(task.clean))
            """), (r"clean: the MLPs outside the circuit were not corrupted: every MLP not in components must take "
                  r"its output")),
    },
    "patch_each_head": {
        'denoising (runs swapped)': (W("""
            def patch_each_head(model, task):
                with torch.no_grad():
                    _, corrupt_cache = model.run_with_cache(task.clean, names_filter=lambda n: n.endswith("hook_z"))
                    base = task.metric(model(task.corrupt)).mean()
                    out = torch.zeros(model.cfg.n_layers, model.cfg.n_heads)
                    for layer in range(model.cfg.n_layers):
                        for head in range(model.cfg.n_heads):
                            def hook(z, hook, head=head):
                                z = z.clone()
                                z[:, :, head] = corrupt_cache[hook.name][:, :, head]
                                return z

                            with model.hooks(fwd_hooks=[(f"blocks.{layer}.attn.hook_z", hook)]):
                                out[layer, head] = task.metric(model(task.corrupt)).mean() - base
                return out
            """), r"denoising"),
        'clean metric not subtracted': (W("""
            def patch_each_head(model, task):
                with torch.no_grad():
                    _, corrupt_cache = model.run_with_cache(task.corrupt, names_filter=lambda n: n.endswith("hook_z"))
                    base = 0.0
                    out = torch.zeros(model.cfg.n_layers, model.cfg.n_heads)
                    for layer in range(model.cfg.n_layers):
                        for head in range(model.cfg.n_heads):
                            def hook(z, hook, head=head):
                                z = z.clone()
                                z[:, :, head] = corrupt_cache[hook.name][:, :, head]
                                return z

                            with model.hooks(fwd_hooks=[(f"blocks.{layer}.attn.hook_z", hook)]):
                                out[layer, head] = task.metric(model(task.clean)).mean() - base
                return out
            """), r"you returned the patched metric itself"),
        'whole layer patched': (W("""
            def patch_each_head(model, task):
                with torch.no_grad():
                    _, corrupt_cache = model.run_with_cache(task.corrupt, names_filter=lambda n: n.endswith("hook_z"))
                    base = task.metric(model(task.clean)).mean()
                    out = torch.zeros(model.cfg.n_layers, model.cfg.n_heads)
                    for layer in range(model.cfg.n_layers):
                        for head in range(model.cfg.n_heads):
                            def hook(z, hook, head=head):
                                z = z.clone()
                                z[:, :, :] = corrupt_cache[hook.name][:, :, :]
                                return z

                            with model.hooks(fwd_hooks=[(f"blocks.{layer}.attn.hook_z", hook)]):
                                out[layer, head] = task.metric(model(task.clean)).mean() - base
                return out
            """), r"you patched every head of the layer at once"),
        'only END patched': (W("""
            def patch_each_head(model, task):
                with torch.no_grad():
                    _, corrupt_cache = model.run_with_cache(task.corrupt, names_filter=lambda n: n.endswith("hook_z"))
                    base = task.metric(model(task.clean)).mean()
                    out = torch.zeros(model.cfg.n_layers, model.cfg.n_heads)
                    for layer in range(model.cfg.n_layers):
                        for head in range(model.cfg.n_heads):
                            def hook(z, hook, head=head):
                                z = z.clone()
                                z[torch.arange(len(task)), task.end_pos, head] = corrupt_cache[hook.name][torch.arange(len(task)), task.end_pos, head]
                                return z

                            with model.hooks(fwd_hooks=[(f"blocks.{layer}.attn.hook_z", hook)]):
                                out[layer, head] = task.metric(model(task.clean)).mean() - base
                return out
            """), r"you patched only at END"),
        "per prompt, not the mean": (W("""
            def patch_each_head(model, task):
                with torch.no_grad():
                    _, corrupt_cache = model.run_with_cache(task.corrupt, names_filter=lambda n: n.endswith("hook_z"))
                    base = task.metric(model(task.clean))
                    out = torch.zeros(model.cfg.n_layers, model.cfg.n_heads, len(task))
                    for layer in range(model.cfg.n_layers):
                        for head in range(model.cfg.n_heads):
                            def hook(z, hook, head=head):
                                z = z.clone()
                                z[:, :, head] = corrupt_cache[hook.name][:, :, head]
                                return z

                            with model.hooks(fwd_hooks=[(f"blocks.{layer}.attn.hook_z", hook)]):
                                out[layer, head] = task.metric(model(task.clean)) - base
                return out
            """), r"Δ metric per head: expected shape"),
    },
    "necessity": {
        'corrupts the rest (sufficiency)': (W("""
            def necessity(model, task, components):
                bad = set(components)
                L = model.cfg.n_layers
                names = ["hook_embed"] + [f"blocks.{l}.attn.hook_z" for l in range(L)] + [f"blocks.{l}.hook_mlp_out" for l in range(L)]
                _, corrupt_cache = model.run_with_cache(task.corrupt, names_filter=lambda n: n in names)

                def hook(act, hook):
                    act, old, l = act.clone(), corrupt_cache[hook.name], hook.name.split(".")[1] if "." in hook.name else None
                    if hook.name.endswith("hook_z"):
                        for h in range(model.cfg.n_heads):
                            if f"a{l}.h{h}" not in bad:
                                act[:, :, h] = old[:, :, h]
                        return act
                    return old if ("embed" if l is None else f"m{l}") not in bad else act

                with torch.no_grad(), model.hooks(fwd_hooks=[(n, hook) for n in names]):
                    return task.metric(model(task.clean))
            """), r"that is the sufficiency test"),
        'always corrupts the embedding': (W("""
            def necessity(model, task, components):
                bad = set(components) | {"embed"}
                L = model.cfg.n_layers
                names = ["hook_embed"] + [f"blocks.{l}.attn.hook_z" for l in range(L)] + [f"blocks.{l}.hook_mlp_out" for l in range(L)]
                _, corrupt_cache = model.run_with_cache(task.corrupt, names_filter=lambda n: n in names)

                def hook(act, hook):
                    act, old, l = act.clone(), corrupt_cache[hook.name], hook.name.split(".")[1] if "." in hook.name else None
                    if hook.name.endswith("hook_z"):
                        for h in range(model.cfg.n_heads):
                            if f"a{l}.h{h}" in bad:
                                act[:, :, h] = old[:, :, h]
                        return act
                    return old if ("embed" if l is None else f"m{l}") in bad else act

                with torch.no_grad(), model.hooks(fwd_hooks=[(n, hook) for n in names]):
                    return task.metric(model(task.clean))
            """), r"the embedding was corrupted although 'embed' is not in components"),
        'never corrupts the MLPs': (W("""
            def necessity(model, task, components):
                bad = set(components) - {f"m{l}" for l in range(model.cfg.n_layers)}
                L = model.cfg.n_layers
                names = ["hook_embed"] + [f"blocks.{l}.attn.hook_z" for l in range(L)] + [f"blocks.{l}.hook_mlp_out" for l in range(L)]
                _, corrupt_cache = model.run_with_cache(task.corrupt, names_filter=lambda n: n in names)

                def hook(act, hook):
                    act, old, l = act.clone(), corrupt_cache[hook.name], hook.name.split(".")[1] if "." in hook.name else None
                    if hook.name.endswith("hook_z"):
                        for h in range(model.cfg.n_heads):
                            if f"a{l}.h{h}" in bad:
                                act[:, :, h] = old[:, :, h]
                        return act
                    return old if ("embed" if l is None else f"m{l}") in bad else act

                with torch.no_grad(), model.hooks(fwd_hooks=[(n, hook) for n in names]):
                    return task.metric(model(task.clean))
            """), r"the listed MLPs were not corrupted"),
    },
}
