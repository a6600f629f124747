"""BERT for masked-language modelling, built with torch alone (no download, no transformers).

Runs only inside confirmation workers (the target interpreter); gpudoctor's own process
never imports this module. The architecture follows BERT (Devlin et al. 2018,
https://arxiv.org/abs/1810.04805) as in transformers' ``BertForMaskedLM``: token +
position + segment embeddings with LayerNorm, post-LN encoder layers (self-attention,
GELU feed-forward), the MLM head (dense, GELU, LayerNorm, decoder tied to the word
embeddings) and no pooler. With the ``bert-base`` configuration it has 109,514,298
parameters, the same count as ``BertForMaskedLM(BertConfig())``.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F


class BertMLM(nn.Module):
    """BERT encoder + MLM head. ``forward(ids)`` returns logits of shape (batch, seq, vocab)."""

    def __init__(self, vocab: int, hidden: int, layers: int, heads: int, ffn: int, max_pos: int,
                 type_vocab: int = 2, dropout: float = 0.1, eps: float = 1e-12):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(max_pos, hidden)
        self.segment = nn.Embedding(type_vocab, hidden)
        self.emb_norm = nn.LayerNorm(hidden, eps=eps)
        self.drop = nn.Dropout(dropout)
        # separate layer objects (nn.TransformerEncoder would deep-copy one initialised layer)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(hidden, heads, ffn, dropout, activation="gelu", batch_first=True,
                                       norm_first=False, layer_norm_eps=eps) for _ in range(layers))
        self.head_dense = nn.Linear(hidden, hidden)
        self.head_norm = nn.LayerNorm(hidden, eps=eps)
        self.decoder_bias = nn.Parameter(torch.zeros(vocab))
        self.apply(self._init)

    @staticmethod
    def _init(m: nn.Module) -> None:
        # BERT's initializer_range 0.02 (transformers BertConfig default)
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.MultiheadAttention):
            nn.init.normal_(m.in_proj_weight, mean=0.0, std=0.02)
            nn.init.zeros_(m.in_proj_bias)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        x = self.word(ids) + self.position(pos) + self.segment(torch.zeros_like(ids))
        x = self.drop(self.emb_norm(x))
        for layer in self.layers:
            x = layer(x)
        h = self.head_norm(F.gelu(self.head_dense(x)))
        return F.linear(h, self.word.weight, self.decoder_bias)


def build(kind: str, config: dict, device) -> tuple[nn.Module, Callable[..., Any]]:
    """Build the model and its loss function ``loss_fn(model, ids, labels) -> scalar``.

    ``kind``: 'builtin' / 'tiny' (this module's BertMLM with ``config``) or 'hf'
    (transformers ``BertForMaskedLM(BertConfig())``, random init, never a download).
    Raises ImportError for 'hf' when transformers is missing.
    """
    if kind == "hf":
        from transformers import BertConfig, BertForMaskedLM  # noqa: WPS433 (optional, slow import)

        model = BertForMaskedLM(BertConfig()).to(device)

        def hf_loss(m, ids, labels):
            return m(input_ids=ids, labels=labels).loss

        return model, hf_loss
    model = BertMLM(**config).to(device)

    def mlm_loss(m, ids, labels):
        logits = m(ids)
        return F.cross_entropy(logits.view(-1, logits.shape[-1]).float(), labels.view(-1), ignore_index=-100)

    return model, mlm_loss


def synthetic_batch(batch: int, seq: int, vocab: int, device, seed: int, mask_prob: float = 0.15):
    """Random token ids and MLM labels (-100 except on ~15 % of positions), from ``seed``."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (batch, seq), generator=g)
    labels = torch.randint(0, vocab, (batch, seq), generator=g)
    keep = torch.rand((batch, seq), generator=g) < mask_prob
    labels = torch.where(keep, labels, torch.full_like(labels, -100))
    return ids.to(device), labels.to(device)
