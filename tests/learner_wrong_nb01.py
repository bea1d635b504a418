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
        "final LayerNorm not recomputed": (W("""
            def direct_path_patch(model, task, sender):
                end = task.end_pos
                delta = component_output(model, task.corrupt, sender, end) - component_output(model, task.clean, sender, end)
                rows = torch.arange(len(end))
                with torch.no_grad():
                    logits = model(task.clean)
                    logits[rows, end] += delta @ model.W_U
                return task.metric(logits)
            """), r"you added the change to the logits through W_U, so the final LayerNorm was not recomputed"),
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
    "path_patch": {
        "clean minus corrupted": (W("""
            def path_patch(model, task, sender, receiver, position):
                from tutorial_lib.core.components import parse
                from tutorial_lib.core.view import engine_view
                from tutorial_lib.methods.lens import component_output
                from tutorial_lib.tasks.base import task_positions
                pos = task_positions(task, position)
                rows = torch.arange(len(pos))
                delta = component_output(model, task.clean, sender, pos) - component_output(model, task.corrupt, sender, pos)
                r = parse(receiver)

                def add(x, hook):
                    x = x.clone()
                    if r.kind == "mlp":
                        x[rows, pos] += delta
                    else:
                        x[rows, pos, r.head] += delta
                    return x

                with torch.no_grad(), engine_view(model, split_qkv=True, mlp_in=True):
                    if r.kind == "mlp":
                        hooks = [(f"blocks.{r.layer}.hook_mlp_in", add)]
                    else:
                        z_name = f"blocks.{r.layer}.attn.hook_z"
                        _, cache = model.run_with_cache(task.clean, names_filter=z_name)

                        def read_at_end(z, hook):
                            new = z.clone()
                            new[:, :, r.head] = cache[z_name][:, :, r.head]
                            new[rows, task.end_pos, r.head] = z[rows, task.end_pos, r.head]
                            return new

                        hooks = [(f"blocks.{r.layer}.hook_{r.input}_input", add), (z_name, read_at_end)]
                    with model.hooks(fwd_hooks=hooks):
                        return task.metric(model(task.clean))
            """), r"the sign is flipped: the change to add is the sender's corrupted output minus its clean output"),
        "every head of the layer": (W("""
            def path_patch(model, task, sender, receiver, position):
                from tutorial_lib.core.components import parse
                from tutorial_lib.core.view import engine_view
                from tutorial_lib.methods.lens import component_output
                from tutorial_lib.tasks.base import task_positions
                pos = task_positions(task, position)
                rows = torch.arange(len(pos))
                delta = component_output(model, task.corrupt, sender, pos) - component_output(model, task.clean, sender, pos)
                r = parse(receiver)

                def add(x, hook):
                    x = x.clone()
                    if r.kind == "mlp":
                        x[rows, pos] += delta
                    else:
                        x[rows, pos] += delta[:, None]
                    return x

                with torch.no_grad(), engine_view(model, split_qkv=True, mlp_in=True):
                    if r.kind == "mlp":
                        hooks = [(f"blocks.{r.layer}.hook_mlp_in", add)]
                    else:
                        z_name = f"blocks.{r.layer}.attn.hook_z"
                        _, cache = model.run_with_cache(task.clean, names_filter=z_name)

                        def read_at_end(z, hook):
                            new = z.clone()
                            new[:, :, r.head] = cache[z_name][:, :, r.head]
                            new[rows, task.end_pos, r.head] = z[rows, task.end_pos, r.head]
                            return new

                        hooks = [(f"blocks.{r.layer}.hook_{r.input}_input", add), (z_name, read_at_end)]
                    with model.hooks(fwd_hooks=hooks):
                        return task.metric(model(task.clean))
            """), r"you added the change to the [qkv] input of every head in the layer"),
        "receiver head kept at every position": (W("""
            def path_patch(model, task, sender, receiver, position):
                from tutorial_lib.core.components import parse
                from tutorial_lib.core.view import engine_view
                from tutorial_lib.methods.lens import component_output
                from tutorial_lib.tasks.base import task_positions
                pos = task_positions(task, position)
                rows = torch.arange(len(pos))
                delta = component_output(model, task.corrupt, sender, pos) - component_output(model, task.clean, sender, pos)
                r = parse(receiver)

                def add(x, hook):
                    x = x.clone()
                    if r.kind == "mlp":
                        x[rows, pos] += delta
                    else:
                        x[rows, pos, r.head] += delta
                    return x

                with torch.no_grad(), engine_view(model, split_qkv=True, mlp_in=True):
                    if r.kind == "mlp":
                        hooks = [(f"blocks.{r.layer}.hook_mlp_in", add)]
                    else:
                        z_name = f"blocks.{r.layer}.attn.hook_z"
                        _, cache = model.run_with_cache(task.clean, names_filter=z_name)

                        def read_at_end(z, hook):
                            new = z.clone()
                            new[:, :, r.head] = cache[z_name][:, :, r.head]
                            new[rows, task.end_pos, r.head] = z[rows, task.end_pos, r.head]
                            return new

                        hooks = [(f"blocks.{r.layer}.hook_{r.input}_input", add)]
                    with model.hooks(fwd_hooks=hooks):
                        return task.metric(model(task.clean))
            """), r"the receiver head's changed output was kept at every position"),
        "the residual stream before the MLP": (W("""
            def path_patch(model, task, sender, receiver, position):
                from tutorial_lib.core.components import parse
                from tutorial_lib.core.view import engine_view
                from tutorial_lib.methods.lens import component_output
                from tutorial_lib.tasks.base import task_positions
                pos = task_positions(task, position)
                rows = torch.arange(len(pos))
                delta = component_output(model, task.corrupt, sender, pos) - component_output(model, task.clean, sender, pos)
                r = parse(receiver)

                def add(x, hook):
                    x = x.clone()
                    if r.kind == "mlp":
                        x[rows, pos] += delta
                    else:
                        x[rows, pos, r.head] += delta
                    return x

                with torch.no_grad(), engine_view(model, split_qkv=True, mlp_in=True):
                    if r.kind == "mlp":
                        hooks = [(f"blocks.{r.layer}.hook_resid_mid", add)]
                    else:
                        z_name = f"blocks.{r.layer}.attn.hook_z"
                        _, cache = model.run_with_cache(task.clean, names_filter=z_name)

                        def read_at_end(z, hook):
                            new = z.clone()
                            new[:, :, r.head] = cache[z_name][:, :, r.head]
                            new[rows, task.end_pos, r.head] = z[rows, task.end_pos, r.head]
                            return new

                        hooks = [(f"blocks.{r.layer}.hook_{r.input}_input", add), (z_name, read_at_end)]
                    with model.hooks(fwd_hooks=hooks):
                        return task.metric(model(task.clean))
            """), r"(added the change to the residual stream \(hook_resid_mid\)|activation patching\) or added the change to the residual stream \(hook_resid_mid\))"),
        "always the key input": (W("""
            def path_patch(model, task, sender, receiver, position):
                from tutorial_lib.core.components import parse
                from tutorial_lib.core.view import engine_view
                from tutorial_lib.methods.lens import component_output
                from tutorial_lib.tasks.base import task_positions
                pos = task_positions(task, position)
                rows = torch.arange(len(pos))
                delta = component_output(model, task.corrupt, sender, pos) - component_output(model, task.clean, sender, pos)
                r = parse(receiver)

                def add(x, hook):
                    x = x.clone()
                    if r.kind == "mlp":
                        x[rows, pos] += delta
                    else:
                        x[rows, pos, r.head] += delta
                    return x

                with torch.no_grad(), engine_view(model, split_qkv=True, mlp_in=True):
                    if r.kind == "mlp":
                        hooks = [(f"blocks.{r.layer}.hook_mlp_in", add)]
                    else:
                        z_name = f"blocks.{r.layer}.attn.hook_z"
                        _, cache = model.run_with_cache(task.clean, names_filter=z_name)

                        def read_at_end(z, hook):
                            new = z.clone()
                            new[:, :, r.head] = cache[z_name][:, :, r.head]
                            new[rows, task.end_pos, r.head] = z[rows, task.end_pos, r.head]
                            return new

                        hooks = [(f"blocks.{r.layer}.hook_k_input", add), (z_name, read_at_end)]
                    with model.hooks(fwd_hooks=hooks):
                        return task.metric(model(task.clean))
            """), r"(you patched the head's k input, but the receiver is its [qv] input|you patched the head's q input)"),
    },
    "search_step": {
        "the patched metric, not its change": (W("""
            def search_step(model, task, receiver, position):
                from tutorial_lib.core.components import all_components, parse
                with torch.no_grad():
                    clean = task.metric(model(task.clean))
                r = parse(receiver)
                out = {}
                for name in all_components(model, include_embed=True):
                    s = parse(name)
                    if s.kind == "mlp" and s.layer >= r.layer:
                        continue
                    if s.kind == "head" and (s.layer > r.layer or (s.layer == r.layer and r.kind == "head")):
                        continue
                    out[name] = float(path_patch(model, task, name, receiver, position).mean())
                return out
            """), r"you returned the path-patched metric itself"),
        "clean minus patched": (W("""
            def search_step(model, task, receiver, position):
                from tutorial_lib.core.components import all_components, parse
                with torch.no_grad():
                    clean = task.metric(model(task.clean))
                r = parse(receiver)
                out = {}
                for name in all_components(model, include_embed=True):
                    s = parse(name)
                    if s.kind == "mlp" and s.layer >= r.layer:
                        continue
                    if s.kind == "head" and (s.layer > r.layer or (s.layer == r.layer and r.kind == "head")):
                        continue
                    out[name] = float((clean - path_patch(model, task, name, receiver, position)).mean())
                return out
            """), r"the effect has the wrong sign"),
        "the MLP's own layer's heads left out": (W("""
            def search_step(model, task, receiver, position):
                from tutorial_lib.core.components import all_components, parse
                with torch.no_grad():
                    clean = task.metric(model(task.clean))
                r = parse(receiver)
                out = {}
                for name in all_components(model, include_embed=True):
                    s = parse(name)
                    if s.kind == "mlp" and s.layer >= r.layer:
                        continue
                    if s.kind == "head" and (s.layer >= r.layer):
                        continue
                    out[name] = float((path_patch(model, task, name, receiver, position) - clean).mean())
                return out
            """), r"senders that reach m\d+ are missing"),
        "every component a sender": (W("""
            def search_step(model, task, receiver, position):
                from tutorial_lib.core.components import all_components, parse
                with torch.no_grad():
                    clean = task.metric(model(task.clean))
                r = parse(receiver)
                out = {}
                for name in all_components(model, include_embed=True):
                    s = parse(name)
                    if s.kind == "head" and (s.layer > r.layer or (s.layer == r.layer and r.kind == "head")):
                        continue
                    out[name] = float((path_patch(model, task, name, receiver, position) - clean).mean())
                return out
            """), r"of your senders cannot reach"),
    },
    "sufficiency": {
        "whole layer kept clean": (W("""
            def sufficiency(model, task, components):
                keep = set(components)
                layers = {c.split(".")[0][1:] for c in keep if c.startswith("a")}
                L = model.cfg.n_layers
                names = ["hook_embed"] + [f"blocks.{l}.attn.hook_z" for l in range(L)] + [f"blocks.{l}.hook_mlp_out" for l in range(L)]
                _, corrupt_cache = model.run_with_cache(task.corrupt, names_filter=lambda n: n in names)

                def hook(act, hook):
                    old = corrupt_cache[hook.name]
                    if hook.name == "hook_embed":
                        return act if "embed" in keep else old
                    l = hook.name.split(".")[1]
                    if hook.name.endswith("hook_mlp_out"):
                        return act if f"m{l}" in keep else old
                    return act if l in layers else old

                with torch.no_grad(), model.hooks(fwd_hooks=[(n, hook) for n in names]):
                    return task.metric(model(task.clean))
            """), r"you kept a circuit head's whole layer clean"),
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
