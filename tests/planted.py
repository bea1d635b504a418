"""Shared by the spectral-recipe tests: a tiny attention-only model and planted-pair token batches."""
import torch
from transformer_lens import HookedTransformer, HookedTransformerConfig

V, T = 50, 20


def tiny_model(seed=0, attn_only=True):
    """A random 2-layer model (4 heads per layer) over ``V`` tokens and ``T`` positions, in eval mode."""
    cfg = HookedTransformerConfig(
        n_layers=2, d_model=32, n_heads=4, d_head=8, n_ctx=T, d_vocab=V, attn_only=attn_only,
        d_mlp=None if attn_only else 64, act_fn=None if attn_only else "gelu", seed=seed,
    )
    return HookedTransformer(cfg).eval()


def planted_pair_tokens(n, seq_len=T, vocab=V, seed=0):
    """Random tokens; A at a random early position (and nowhere else but the end), B after it, A again last."""
    g = torch.Generator().manual_seed(seed)
    toks = torch.randint(0, vocab, (n, seq_len), generator=g)
    a_pos = torch.randint(1, seq_len - 7, (n,), generator=g)
    A = torch.randint(0, vocab, (n,), generator=g)
    for i in range(n):
        row = toks[i]
        row[row == A[i]] = (A[i] + 1) % vocab
        row[a_pos[i]] = A[i]
        row[-1] = A[i]
    return toks, a_pos
