"""The usual wrong answers to notebook 05_answer_key's exercises and the message its check must give each
(tests/test_learner_notebooks.py runs them; tests/test_checks_nb05.py feeds the same to the checks directly).

{exercise function: {wrong answer: (source of the whole wrong def, regex the check's message matches)}}
"""
from learner_wrong_common import W


def _prev(query: str, key: str, head: str = "head") -> str:
    return W(f"""
        def set_previous_token(model, layer, head, pos):
            attn = model.blocks[layer].attn
            n, d_head = pos.stop - pos.start, attn.W_Q.shape[-1]
            with torch.no_grad():
                for p in range(min(n, d_head)):
                    attn.W_Q[{head}, pos.start + p, p] = {query}
                    if 0 <= {key} < d_head:
                        attn.W_K[{head}, pos.start + p, {key}] = 1.0
        """)


PREVIOUS_TOKEN = {
    "attends to itself (no shift)": (_prev("12.0", "p"), r"attends to its own position"),
    "attends two back": (_prev("12.0", "p + 2"), r"attends two positions back"),
    "scale too small": (_prev("1.0", "p + 1"), r"attention is spread out"),
    "key shifted the wrong way (a later key, masked)": (_prev("12.0", "p - 1"), r"attention is spread out"),
    "every head of the layer": (_prev("12.0", "p + 1", head=":"), r"changed W_Q of other heads of layer 0"),
}


def _roc(body: str) -> str:
    return W("""
        def roc_from_ranking(scores, truth):
        """) + "\n" + "\n".join("    " + line for line in W(body).splitlines())


_GROUPED = """
    last = torch.ones(len(key), dtype=torch.bool)
    last[:-1] = key[1:] != key[:-1]
"""

ROC = {
    "never sorted": (_roc("""
        hit = truth.bool()
        tp, fp = hit.cumsum(0).double(), (~hit).cumsum(0).double()
        tpr = [0.0] + (tp / hit.sum()).tolist()
        fpr = [0.0] + (fp / (~hit).sum()).tolist()
        return fpr, tpr, float(torch.trapezoid(torch.tensor(tpr), torch.tensor(fpr)))
        """), r"you walked the items in the order given, not ranked"),
    "ranked by the signed score": (_roc("""
        key = scores.double()
        order = torch.argsort(key, descending=True, stable=True)
        key, hit = key[order], truth.bool()[order]
        tp, fp = hit.cumsum(0).double(), (~hit).cumsum(0).double()
        last = torch.ones(len(key), dtype=torch.bool)
        last[:-1] = key[1:] != key[:-1]
        tpr = [0.0] + (tp[last] / hit.sum()).tolist()
        fpr = [0.0] + (fp[last] / (~hit).sum()).tolist()
        return fpr, tpr, float(torch.trapezoid(torch.tensor(tpr), torch.tensor(fpr)))
        """), r"rank by \|score\|"),
    "ties broken by order": (_roc("""
        key = scores.abs().double()
        order = torch.argsort(key, descending=True, stable=True)
        hit = truth.bool()[order]
        tp, fp = hit.cumsum(0).double(), (~hit).cumsum(0).double()
        tpr = [0.0] + (tp / hit.sum()).tolist()
        fpr = [0.0] + (fp / (~hit).sum()).tolist()
        return fpr, tpr, float(torch.trapezoid(torch.tensor(tpr), torch.tensor(fpr)))
        """), r"tied scores must enter together"),
    "no (0, 0) start": (_roc("""
        key = scores.abs().double()
        order = torch.argsort(key, descending=True, stable=True)
        key, hit = key[order], truth.bool()[order]
        tp, fp = hit.cumsum(0).double(), (~hit).cumsum(0).double()
        last = torch.ones(len(key), dtype=torch.bool)
        last[:-1] = key[1:] != key[:-1]
        tpr, fpr = (tp[last] / hit.sum()).tolist(), (fp[last] / (~hit).sum()).tolist()
        return fpr, tpr, float(torch.trapezoid(torch.tensor(tpr), torch.tensor(fpr)))
        """), r"must start at \(0, 0\)"),
    "fpr and tpr swapped": (_roc("""
        key = scores.abs().double()
        order = torch.argsort(key, descending=True, stable=True)
        key, hit = key[order], truth.bool()[order]
        tp, fp = hit.cumsum(0).double(), (~hit).cumsum(0).double()
        last = torch.ones(len(key), dtype=torch.bool)
        last[:-1] = key[1:] != key[:-1]
        tpr = [0.0] + (tp[last] / hit.sum()).tolist()
        fpr = [0.0] + (fp[last] / (~hit).sum()).tolist()
        return tpr, fpr, float(torch.trapezoid(torch.tensor(fpr), torch.tensor(tpr)))
        """), r"fpr and tpr are swapped"),
    "false positives over all items": (_roc("""
        key = scores.abs().double()
        order = torch.argsort(key, descending=True, stable=True)
        key, hit = key[order], truth.bool()[order]
        tp, fp = hit.cumsum(0).double(), (~hit).cumsum(0).double()
        last = torch.ones(len(key), dtype=torch.bool)
        last[:-1] = key[1:] != key[:-1]
        tpr = [0.0] + (tp[last] / hit.sum()).tolist()
        fpr = [0.0] + (fp[last] / len(key)).tolist()
        return fpr, tpr, float(torch.trapezoid(torch.tensor(tpr), torch.tensor(fpr)))
        """), r"not by all items"),
}

WHY = {
    "always the gradient": (W("""
        def why_missed(facts):
            return "gradient misses it"
        """), r"agree and the effect is not small|same value as the clean one"),
    "EAP-IG compared instead of EAP": (W("""
        def why_missed(facts):
            if abs(facts["path patching"]) < 0.05 * abs(facts["clean metric"]):
                return "no difference to patch"
            if abs(facts["EAP-IG"]) < abs(facts["path patching"]) / 3:
                return "gradient misses it"
            return "ranked below the cut"
        """), r"compare EAP with path patching"),
    "the zero cut instead of the corrupted one": (W("""
        def why_missed(facts):
            if abs(facts["cut to zero"]) < 0.05 * abs(facts["clean metric"]):
                return "no difference to patch"
            if abs(facts["EAP"]) < abs(facts["path patching"]) / 3:
                return "gradient misses it"
            return "ranked below the cut"
        """), r"gives this edge the same value as the clean one"),
    "not one of the reasons": (W("""
        def why_missed(facts):
            return "saturated softmax"
        """), r"return one of"),
}

WRONG = {"set_previous_token": PREVIOUS_TOKEN, "roc_from_ranking": ROC, "why_missed": WHY}
