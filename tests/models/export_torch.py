#!/usr/bin/python3
"""Real torch.onnx exports for the importer's tests (issue 23).

    /usr/bin/python3 tests/models/export_torch.py [OUTDIR] [--only NAME,NAME] [--opsets 13,17]

OUTDIR defaults to tests/models/torch/. For every model below and every opset it writes
`<model>_op<opset>.onnx` (weights stripped) and merges its counts into OUTDIR/expected.json.
Needs Debian's torch 1.13, torchvision 0.14 and onnx 1.12 (/usr/bin/python3); downloads
nothing (every torchvision constructor gets weights=None).

Why each step (see README.md in the output directory for the table):
* Noise: untrained models hold many bit-identical tensors (BN gamma=1, beta=0, zero biases);
  torch.onnx deduplicates initializers by value in eval mode, which turns them into shared
  tensors or Identity nodes that a real (trained) export never has. Every floating-point
  parameter and buffer is multiplied by (1 + 0.01 u), u uniform in [-1, 1); exact zeros become
  1e-3 u so that they are unique too. torch.manual_seed fixes everything.
* Grad mode stays ON during export and counting: in torch 1.13 nn.MultiheadAttention and
  nn.TransformerEncoder take a fused fast path under no_grad that has no ONNX symbolic.
* Stripping: each initializer keeps name, dims and data_type but loses its data, except
  integer/bool tensors of <= 64 elements (shape constants, axes, indices) and rank-0 tensors
  (Clip bounds, scales), which the importer reads. Constant nodes are left as exported.
* Export settings: SETTINGS exports some of the models with other settings of torch.onnx.export
  (local functions, training mode) as `<model>_<setting>_op<opset>.onnx`. The local-function
  files are not byte-identical run to run (torch 1.13's function extraction orders the functions
  and their attributes, and picks which module gets the name "BasicBlock.1", differently from
  run to run, even with PYTHONHASHSEED fixed); their imports are.
* Counts come from torch: `macs` is Σ M·K·N over aten.mm/addmm/bmm/baddbmm (and mv/dot) plus
  convolution out_elements·(Cin/groups)·kh·kw (transposed: in_elements·(Cout/groups)·kh·kw)
  seen by a TorchDispatchMode in one forward pass on the export input; the same pass is checked
  against forward hooks on nn.Conv*/nn.ConvTranspose*/nn.Linear/nn.MultiheadAttention (the
  matmuls with a parameter operand must equal the hooks' sum exactly; activation x activation
  matmuls, i.e. attention, are reported as `act_macs`).
"""

import argparse
import io
import json
import math
import os
import sys
import time

import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torch.utils._python_dispatch import TorchDispatchMode

SEED = 0
KEEP_DATA_MAX_ELEMENTS = 64
INT_TYPES = {onnx.TensorProto.INT64, onnx.TensorProto.INT32, onnx.TensorProto.INT16,
             onnx.TensorProto.INT8, onnx.TensorProto.UINT8, onnx.TensorProto.UINT16,
             onnx.TensorProto.UINT32, onnx.TensorProto.UINT64, onnx.TensorProto.BOOL}
FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16,
               onnx.TensorProto.BFLOAT16}


# ---------------------------------------------------------------- hand-written models

class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class LlamaAttention(nn.Module):
    def __init__(self, d, heads, seq):
        super().__init__()
        self.h, self.hd = heads, d // heads
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, d, bias=False)
        self.v_proj = nn.Linear(d, d, bias=False)
        self.o_proj = nn.Linear(d, d, bias=False)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        freqs = torch.outer(torch.arange(seq).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos()[None, None], persistent=False)
        self.register_buffer("sin", emb.sin()[None, None], persistent=False)
        self.register_buffer("mask", torch.full((seq, seq), float("-inf")).triu(1)[None, None],
                             persistent=False)

    def forward(self, x):
        b, t, d = x.shape
        q = self.q_proj(x).view(b, t, self.h, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.h, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.h, self.hd).transpose(1, 2)
        q = q * self.cos + rotate_half(q) * self.sin
        k = k * self.cos + rotate_half(k) * self.sin
        s = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.hd) + self.mask
        o = torch.matmul(F.softmax(s, dim=-1), v)
        return self.o_proj(o.transpose(1, 2).reshape(b, t, d))


class LlamaMLP(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(d, hidden, bias=False)
        self.up_proj = nn.Linear(d, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaLayer(nn.Module):
    def __init__(self, d, heads, hidden, seq):
        super().__init__()
        self.input_layernorm = RMSNorm(d)
        self.self_attn = LlamaAttention(d, heads, seq)
        self.post_attention_layernorm = RMSNorm(d)
        self.mlp = LlamaMLP(d, hidden)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class Llama(nn.Module):
    """LLaMA-style decoder: token embedding, pre-RMSNorm layers with rotary attention (causal
    mask added to the scores) and a SwiGLU MLP, final RMSNorm, untied LM head."""

    def __init__(self, vocab=4096, d=512, heads=8, hidden=1408, layers=2, seq=128):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(LlamaLayer(d, heads, hidden, seq) for _ in range(layers))
        self.norm = RMSNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x))


class GPTBlock(nn.Module):
    def __init__(self, d, heads, seq):
        super().__init__()
        self.h = heads
        self.ln_1 = nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.c_proj_mlp = nn.Linear(4 * d, d)
        self.register_buffer("bias", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq),
                             persistent=False)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).chunk(3, dim=2)
        q = q.view(b, t, self.h, d // self.h).transpose(1, 2)
        k = k.view(b, t, self.h, d // self.h).transpose(1, 2)
        v = v.view(b, t, self.h, d // self.h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // self.h))
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        x = x + self.c_proj(y.transpose(1, 2).contiguous().view(b, t, d))
        return x + self.c_proj_mlp(F.gelu(self.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    """GPT-2-style decoder: token + learned position embeddings, pre-LN blocks with one QKV
    nn.Linear split by chunk(3), causal masked_fill, GELU MLP, final LayerNorm, LM head tied to
    the token embedding (as GPT-2)."""

    def __init__(self, vocab=4096, d=384, heads=6, layers=2, seq=128):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(seq, d)
        self.h = nn.ModuleList(GPTBlock(d, heads, seq) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, ids):
        pos = torch.arange(0, ids.shape[1], dtype=torch.long).unsqueeze(0)
        x = self.wte(ids) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


class TorchEncoder(nn.Module):
    """BERT-base-like widths, 2 layers of nn.TransformerEncoderLayer (nn.MultiheadAttention
    inside), batch_first, GELU, post-LN; then a classifier on the mean over tokens."""

    def __init__(self, d=256, heads=4, ff=1024, layers=2, classes=10):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.1, activation="gelu",
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        return self.head(self.encoder(x).mean(dim=1))


def gn_block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.GroupNorm(8, cout), nn.SiLU(),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.GroupNorm(8, cout), nn.SiLU())


class UNet(nn.Module):
    """U-Net: 4 levels (32-64-128-256 channels), double 3x3 conv + GroupNorm(8) + SiLU, max-pool
    down, ConvTranspose 2x2 s2 up, skip concatenation, 1x1 conv to 2 classes."""

    def __init__(self, cin=3, base=32, classes=2):
        super().__init__()
        w = [base, base * 2, base * 4, base * 8]
        self.enc = nn.ModuleList([gn_block(cin, w[0]), gn_block(w[0], w[1]), gn_block(w[1], w[2])])
        self.bottleneck = gn_block(w[2], w[3])
        self.up = nn.ModuleList([nn.ConvTranspose2d(w[3], w[2], 2, stride=2),
                                 nn.ConvTranspose2d(w[2], w[1], 2, stride=2),
                                 nn.ConvTranspose2d(w[1], w[0], 2, stride=2)])
        self.dec = nn.ModuleList([gn_block(w[3], w[2]), gn_block(w[2], w[1]), gn_block(w[1], w[0])])
        self.out = nn.Conv2d(w[0], classes, 1)

    def forward(self, x):
        skips = []
        for enc in self.enc:
            x = enc(x)
            skips.append(x)
            x = F.max_pool2d(x, 2)
        x = self.bottleneck(x)
        for up, dec, skip in zip(self.up, self.dec, reversed(skips)):
            x = dec(torch.cat([up(x), skip], dim=1))
        return self.out(x)


class ConvBNSiLU(nn.Module):
    def __init__(self, cin, cout, k=1, s=1):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c, shortcut=True):
        super().__init__()
        self.cv1 = ConvBNSiLU(c, c, 3)
        self.cv2 = ConvBNSiLU(c, c, 3)
        self.add = shortcut

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C2f(nn.Module):
    """YOLOv8's C2f: a 1x1 conv whose output torch.split halves, n bottlenecks chained on the
    second half, every intermediate concatenated, a 1x1 conv."""

    def __init__(self, cin, cout, n=1, shortcut=False):
        super().__init__()
        self.c = cout // 2
        self.cv1 = ConvBNSiLU(cin, 2 * self.c, 1)
        self.cv2 = ConvBNSiLU((2 + n) * self.c, cout, 1)
        self.m = nn.ModuleList(Bottleneck(self.c, shortcut) for _ in range(n))

    def forward(self, x):
        y = list(self.cv1(x).split((self.c, self.c), 1))
        for m in self.m:
            y.append(m(y[-1]))
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    def __init__(self, cin, cout, k=5):
        super().__init__()
        c = cin // 2
        self.cv1 = ConvBNSiLU(cin, c, 1)
        self.cv2 = ConvBNSiLU(c * 4, cout, 1)
        self.m = nn.MaxPool2d(k, 1, k // 2)

    def forward(self, x):
        x = self.cv1(x)
        y1 = self.m(x)
        y2 = self.m(y1)
        return self.cv2(torch.cat((x, y1, y2, self.m(y2)), 1))


class YoloDetect(nn.Module):
    def __init__(self, nc, chs, reg_max=16):
        super().__init__()
        c2, c3 = max(16, chs[0] // 4, reg_max * 4), max(chs[0], min(nc, 100))
        self.cv2 = nn.ModuleList(nn.Sequential(ConvBNSiLU(c, c2, 3), ConvBNSiLU(c2, c2, 3),
                                               nn.Conv2d(c2, 4 * reg_max, 1)) for c in chs)
        self.cv3 = nn.ModuleList(nn.Sequential(ConvBNSiLU(c, c3, 3), ConvBNSiLU(c3, c3, 3),
                                               nn.Conv2d(c3, nc, 1)) for c in chs)

    def forward(self, xs):
        return [torch.cat((a(x), b(x)), 1) for x, a, b in zip(xs, self.cv2, self.cv3)]


class YoloV8n(nn.Module):
    """YOLOv8n layout (widths 16-32-64-128-256, depth 1-2-2-1): backbone of stride-2 ConvBNSiLU
    and C2f, SPPF, PAN neck (nearest upsample x2, concat, C2f; stride-2 conv, concat, C2f),
    decoupled head per level (box 64 ch, cls 80 ch) concatenated on channels; no DFL decoding,
    no NMS. Outputs the three levels."""

    def __init__(self, nc=80):
        super().__init__()
        self.b0 = ConvBNSiLU(3, 16, 3, 2)
        self.b1 = ConvBNSiLU(16, 32, 3, 2)
        self.b2 = C2f(32, 32, 1, True)
        self.b3 = ConvBNSiLU(32, 64, 3, 2)
        self.b4 = C2f(64, 64, 2, True)
        self.b5 = ConvBNSiLU(64, 128, 3, 2)
        self.b6 = C2f(128, 128, 2, True)
        self.b7 = ConvBNSiLU(128, 256, 3, 2)
        self.b8 = C2f(256, 256, 1, True)
        self.b9 = SPPF(256, 256)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.n12 = C2f(256 + 128, 128, 1)
        self.n15 = C2f(128 + 64, 64, 1)
        self.n16 = ConvBNSiLU(64, 64, 3, 2)
        self.n18 = C2f(64 + 128, 128, 1)
        self.n19 = ConvBNSiLU(128, 128, 3, 2)
        self.n21 = C2f(128 + 256, 256, 1)
        self.detect = YoloDetect(nc, (64, 128, 256))

    def forward(self, x):
        p3 = self.b4(self.b3(self.b2(self.b1(self.b0(x)))))
        p4 = self.b6(self.b5(p3))
        p5 = self.b9(self.b8(self.b7(p4)))
        n12 = self.n12(torch.cat((self.up(p5), p4), 1))
        n15 = self.n15(torch.cat((self.up(n12), p3), 1))
        n18 = self.n18(torch.cat((self.n16(n15), n12), 1))
        n21 = self.n21(torch.cat((self.n19(n18), p5), 1))
        return tuple(self.detect([n15, n18, n21]))


class FeedForward(nn.Module):
    def __init__(self, d, mult=4):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, d * mult)
        self.fc2 = nn.Linear(d * mult, d)

    def forward(self, x):
        return self.fc2(F.silu(self.fc1(self.norm(x))))


class ConformerConv(nn.Module):
    def __init__(self, d, kernel=31):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.pointwise1 = nn.Conv1d(d, 2 * d, 1)
        self.depthwise = nn.Conv1d(d, d, kernel, padding=kernel // 2, groups=d)
        self.bn = nn.BatchNorm1d(d)
        self.pointwise2 = nn.Conv1d(d, d, 1)

    def forward(self, x):                      # x: (N, T, d)
        y = self.norm(x).transpose(1, 2)       # (N, d, T)
        y = F.glu(self.pointwise1(y), dim=1)
        y = self.pointwise2(F.silu(self.bn(self.depthwise(y))))
        return y.transpose(1, 2)               # back to (N, T, d)


class ConformerBlock(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ff1 = FeedForward(d)
        self.attn_norm = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.conv = ConformerConv(d)
        self.ff2 = FeedForward(d)
        self.out_norm = nn.LayerNorm(d)

    def forward(self, x):
        x = x + 0.5 * self.ff1(x)
        y = self.attn_norm(x)
        x = x + self.attn(y, y, y, need_weights=False)[0]
        x = x + self.conv(x)
        x = x + 0.5 * self.ff2(x)
        return self.out_norm(x)


class Conformer(nn.Module):
    """Conformer-S widths (d 144, 4 heads, conv kernel 31), 2 blocks, behind the usual
    subsampling front-end: 80 log-mel bins x 256 frames, two 3x3 s2 Conv2d + ReLU, then the
    (C, F) axes merged (permute + reshape) and a Linear to d."""

    def __init__(self, mels=80, d=144, heads=4, blocks=2):
        super().__init__()
        self.sub1 = nn.Conv2d(1, d, 3, 2)
        self.sub2 = nn.Conv2d(d, d, 3, 2)
        f = ((mels - 1) // 2 - 1) // 2
        self.proj = nn.Linear(d * f, d)
        self.blocks = nn.ModuleList(ConformerBlock(d, heads) for _ in range(blocks))

    def forward(self, x):                      # x: (N, 1, T, mels)
        x = F.relu(self.sub2(F.relu(self.sub1(x))))
        n, c, t, f = x.shape
        x = self.proj(x.permute(0, 2, 1, 3).reshape(n, t, c * f))
        for block in self.blocks:
            x = block(x)
        return x


class MixerBlock(nn.Module):
    def __init__(self, tokens, d, token_hidden, channel_hidden):
        super().__init__()
        self.norm1 = nn.LayerNorm(d)
        self.token_fc1 = nn.Linear(tokens, token_hidden)
        self.token_fc2 = nn.Linear(token_hidden, tokens)
        self.norm2 = nn.LayerNorm(d)
        self.channel_fc1 = nn.Linear(d, channel_hidden)
        self.channel_fc2 = nn.Linear(channel_hidden, d)

    def forward(self, x):                      # (N, tokens, d)
        y = self.norm1(x).transpose(1, 2)      # (N, d, tokens): token mixing is over the rows
        y = self.token_fc2(F.gelu(self.token_fc1(y))).transpose(1, 2)
        x = x + y
        return x + self.channel_fc2(F.gelu(self.channel_fc1(self.norm2(x))))


class MLPMixer(nn.Module):
    """Mixer-S/16 widths (d 512, token MLP 256, channel MLP 2048), 4 blocks, 224x224."""

    def __init__(self, d=512, layers=4, patch=16, image=224, classes=1000):
        super().__init__()
        tokens = (image // patch) ** 2
        self.stem = nn.Conv2d(3, d, patch, patch)
        self.blocks = nn.ModuleList(MixerBlock(tokens, d, 256, 2048) for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        x = self.stem(x).flatten(2).transpose(1, 2)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x).mean(dim=1))


class RNNTagger(nn.Module):
    """Plain Elman RNNs (nn.RNN, exported as ONNX RNN): a tanh layer over 50 frames of 80 bins,
    then 2 bidirectional ReLU layers, a Linear tagger per frame; batch_first."""

    def __init__(self, mels=80, classes=32):
        super().__init__()
        self.rnn1 = nn.RNN(mels, 128, batch_first=True)
        self.rnn2 = nn.RNN(128, 64, 2, nonlinearity="relu", bidirectional=True, batch_first=True)
        self.head = nn.Linear(128, classes)

    def forward(self, x):                      # (N, T, mels)
        return self.head(self.rnn2(self.rnn1(x)[0])[0])


class Seq2Seq(nn.Module):
    """nn.Transformer (2 encoder + 2 decoder layers, d 128, 4 heads), sequence-first as its
    default, on one id sequence: the first 24 tokens are the source, the last 16 the target;
    token Embedding + learned positions, the causal target mask of
    generate_square_subsequent_mask (torch.triu: Trilu at opset 14+), a vocabulary head."""

    def __init__(self, vocab=1000, d=128, src=24, tgt=16):
        super().__init__()
        self.src, self.tgt = src, tgt
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(src + tgt, 1, d) * 0.02)
        self.transformer = nn.Transformer(d, 4, 2, 2, 256)
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):                    # (1, src + tgt)
        x = self.embed(ids.transpose(0, 1)) + self.pos     # (S, N, d)
        s, t = x[: self.src], x[self.src:]
        mask = self.transformer.generate_square_subsequent_mask(t.shape[0])
        return self.head(self.transformer(s, t, tgt_mask=mask))


class LRNNet(nn.Module):
    """AlexNet-v1-style stem with nn.LocalResponseNorm (torch 1.13 exports its squeeze(1) as an
    If on the pooled value's shape), ceil-mode MaxPool, AvgPool, Linear (an AdaptiveAvgPool
    after the LRN does not export: its input's size is unknown to the exporter)."""

    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 5, 2, 2)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.lrn = nn.LocalResponseNorm(5)
        self.pool = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.avg = nn.AvgPool2d(2)
        self.fc = nn.Linear(64 * 16, classes)

    def forward(self, x):
        x = self.pool(self.lrn(F.relu(self.conv1(x))))
        x = self.pool(self.lrn(F.relu(self.conv2(x))))
        return self.fc(torch.flatten(self.avg(x), 1))


class CellDecoder(nn.Module):
    """Tacotron-style autoregressive decoder written as a Python loop of cells (8 steps traced):
    a Linear prenet, nn.GRUCell, nn.LSTMCell, a Linear frame projection, from zero initial
    states (torch.zeros: constants the first steps' recurrence Gemms multiply), torch.stack."""

    def __init__(self, mels=80, d=256):
        super().__init__()
        self.d = d
        self.prenet = nn.Linear(mels, 128)
        self.gru = nn.GRUCell(128, d)
        self.lstm = nn.LSTMCell(d, d)
        self.proj = nn.Linear(d, mels)

    def forward(self, x):                      # (1, T, mels)
        h = torch.zeros(1, self.d)
        hl, cl = torch.zeros(1, self.d), torch.zeros(1, self.d)
        frames = []
        for t in range(x.shape[1]):
            h = self.gru(F.relu(self.prenet(x[:, t])), h)
            hl, cl = self.lstm(h, (hl, cl))
            frames.append(self.proj(hl))
        return torch.stack(frames, 1)


class GuidedDenoiser(nn.Module):
    """One classifier-free-guidance step of a latent denoiser: the computed latent doubled along
    the batch (torch.cat([h] * 2)), a learned per-branch embedding, a conv denoiser on both,
    chunk(2) and the guidance mix u + 7.5 (c - u)."""

    def __init__(self, latent=4, d=64):
        super().__init__()
        self.enc = nn.Conv2d(latent, d, 3, padding=1)
        self.emb = nn.Parameter(torch.randn(2, d, 1, 1))
        self.net = nn.Sequential(nn.Conv2d(d, d, 3, padding=1), nn.GroupNorm(8, d), nn.SiLU(),
                                 nn.Conv2d(d, latent, 3, padding=1))

    def forward(self, x):
        h = self.enc(x)
        e = self.net(torch.cat([h] * 2) + self.emb)
        u, c = e.chunk(2)
        return u + 7.5 * (c - u)


class TTAHead(nn.Module):
    """Flip test-time augmentation around a dense detection head: the image and its mirror
    batched, a stride-4 conv body, a 1x1 head split into 80 class and 4 quality channels, class
    scores times the mean quality (a statistic of other channels broadcast over them), the
    mirrored half flipped back and averaged."""

    def __init__(self, classes=80):
        super().__init__()
        self.classes = classes
        self.body = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1), nn.ReLU(), nn.Conv2d(32, 64, 3, 2, 1), nn.ReLU())
        self.head = nn.Conv2d(64, classes + 4, 1)

    def forward(self, x):
        x = torch.cat([x, x.flip(3)], 0)
        cls, q = self.head(self.body(x)).split([self.classes, 4], 1)
        s = cls.sigmoid() * q.sigmoid().mean(1, keepdim=True)
        a, b = s.chunk(2, 0)
        return (a + b.flip(3)) / 2


class EEGNet(nn.Module):
    """EEGNet-8,2 (Lawhern et al. 2018) on 64 electrodes x 128 samples: a temporal Conv2d
    (1 x 64 kernel), BN, the spatial filter as a depthwise Conv2d with depth multiplier 2
    (groups = 8 input channels, 16 outputs, a 64 x 1 kernel across the electrodes), BN, ELU,
    AvgPool, a separable conv (depthwise 1 x 16 + pointwise), BN, ELU, AvgPool, Linear."""

    def __init__(self, electrodes=64, samples=128, f1=8, depth=2, f2=16, classes=4):
        super().__init__()
        self.temporal = nn.Conv2d(1, f1, (1, 64), padding=(0, 32), bias=False)
        self.bn1 = nn.BatchNorm2d(f1)
        self.spatial = nn.Conv2d(f1, f1 * depth, (electrodes, 1), groups=f1, bias=False)
        self.bn2 = nn.BatchNorm2d(f1 * depth)
        self.pool1 = nn.AvgPool2d((1, 4))
        self.separable_dw = nn.Conv2d(f1 * depth, f1 * depth, (1, 16), padding=(0, 8), groups=f1 * depth, bias=False)
        self.separable_pw = nn.Conv2d(f1 * depth, f2, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(f2)
        self.pool2 = nn.AvgPool2d((1, 8))
        width = ((samples + 1) // 4 + 1) // 8   # the even kernels' padding adds one sample each
        self.fc = nn.Linear(f2 * width, classes)

    def forward(self, x):                      # (N, 1, electrodes, samples)
        x = self.bn1(self.temporal(x))
        x = self.pool1(F.elu(self.bn2(self.spatial(x))))
        x = self.pool2(F.elu(self.bn3(self.separable_pw(self.separable_dw(x)))))
        return self.fc(torch.flatten(x, 1))


class ClipText(nn.Module):
    """CLIP-style text encoder (d 128, 2 pre-LN layers of 4 heads, 32 tokens): token Embedding +
    learned positions, a causal float mask, final LayerNorm, end-of-text pooling by the arg-max
    token id (x[arange(b), ids.argmax(-1)]: a Gather at computed indices), a projection."""

    def __init__(self, vocab=1000, d=128, heads=4, layers=2, seq=32, embed=64):
        super().__init__()
        self.token = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(seq, d) * 0.01)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.register_buffer("mask", torch.full((seq, seq), float("-inf")).triu(1), persistent=False)
        self.ln = nn.LayerNorm(d)
        self.proj = nn.Linear(d, embed, bias=False)

    def forward(self, ids):                    # (N, seq)
        x = self.ln(self.encoder(self.token(ids) + self.pos, mask=self.mask))
        return self.proj(x[torch.arange(x.shape[0]), ids.argmax(-1)])


class LMScorer(nn.Module):
    """Scores a token sequence with a small causal LM: Embedding of ids[:, :-1] (a lookup at ids
    the model slices), a GRU, a vocabulary head, log_softmax, and each next token's
    log-probability picked by torch.gather(-1, ids[:, 1:]) (GatherElements at the model's own
    ids), summed over the sequence."""

    def __init__(self, vocab=1000, d=128):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.rnn = nn.GRU(d, d, batch_first=True)
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):                    # (N, T)
        logp = F.log_softmax(self.head(self.rnn(self.embed(ids[:, :-1]))[0]), dim=-1)
        return logp.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1).sum(-1)


class SwitchMoE(nn.Module):
    """A top-1 (Switch) mixture-of-experts layer with dense dispatch, as exported for inference
    without scatter: a LayerNorm, a router Linear, softmax, F.one_hot of the arg-max (OneHot),
    each of 4 expert FFNs on every token, weighted by its one-hot column times its probability
    and summed; a residual."""

    def __init__(self, d=128, hidden=256, experts=4):
        super().__init__()
        self.experts = experts
        self.norm = nn.LayerNorm(d)
        self.router = nn.Linear(d, experts)
        self.ffn = nn.ModuleList(nn.Sequential(nn.Linear(d, hidden), nn.GELU(), nn.Linear(hidden, d))
                                 for _ in range(experts))

    def forward(self, x):                      # (N, T, d)
        h = self.norm(x)
        p = self.router(h).softmax(-1)
        gate = F.one_hot(p.argmax(-1), self.experts).to(x.dtype) * p
        y = x
        for e, ffn in enumerate(self.ffn):
            y = y + gate[..., e:e + 1] * ffn(h)
        return y


class PooledAttention(nn.Module):
    """MViT-style pooling attention on a class token + 8x8 tokens (d 96, 1 head): qkv Linear,
    reshape/transpose/unbind, the class token split off the keys and values with
    torch.tensor_split (torch 1.13 writes a Loop over SequenceInsert and SequenceAt), the rest
    pooled by a depthwise stride-2 Conv2d and LayerNorm, concatenated back, attention, proj."""

    def __init__(self, d=96, side=8):
        super().__init__()
        self.d, self.side = d, side
        self.qkv = nn.Linear(d, 3 * d)
        self.pool_k = nn.Conv2d(d, d, 3, 2, 1, groups=d, bias=False)
        self.pool_v = nn.Conv2d(d, d, 3, 2, 1, groups=d, bias=False)
        self.norm_k = nn.LayerNorm(d)
        self.norm_v = nn.LayerNorm(d)
        self.proj = nn.Linear(d, d)

    def pool(self, x, conv, norm):             # (B, 1, 1 + side², d)
        cls, tokens = torch.tensor_split(x, [1], dim=2)
        b = x.shape[0]
        t = tokens.reshape(b, self.side, self.side, self.d).permute(0, 3, 1, 2)
        t = conv(t).flatten(2).transpose(1, 2).unsqueeze(1)
        return norm(torch.cat([cls, t], dim=2))

    def forward(self, x):                      # (B, 1 + side², d)
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, 1, d).permute(2, 0, 3, 1, 4).unbind(0)
        k = self.pool(k, self.pool_k, self.norm_k)
        v = self.pool(v, self.pool_v, self.norm_v)
        a = (q @ k.transpose(-2, -1) * d ** -0.5).softmax(-1)
        return self.proj((a @ v).transpose(1, 2).reshape(b, n, d))


class BagClassifier(nn.Module):
    """fastText-style classifier: nn.EmbeddingBag (mean over each row's 16 ids; torch 1.13 writes
    a Loop over the bags with a scan output), a Linear to 8 classes."""

    def __init__(self, vocab=1000, d=64, classes=8):
        super().__init__()
        self.bag = nn.EmbeddingBag(vocab, d, mode="mean")
        self.fc = nn.Linear(d, classes)

    def forward(self, ids):                    # (bags, 16)
        return self.fc(self.bag(ids))


class SegOut(nn.Module):
    """torchvision's segmentation models return a dict; the export takes its 'out'."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


# ---------------------------------------------------------------- the zoo

tvm = torchvision.models
tvs = torchvision.models.segmentation


def img(size=224):
    return ("float", (1, 3, size, size))


# name -> (constructor, input spec, constructs)
MODELS = {
    "resnet18": (lambda: tvm.resnet18(weights=None), img(), "BasicBlock residual adds, BN, MaxPool, GlobalAveragePool, Flatten, Gemm"),
    "resnet50": (lambda: tvm.resnet50(weights=None), img(), "Bottleneck residual adds, BN, MaxPool, GlobalAveragePool, Flatten, Gemm"),
    "resnext50_32x4d": (lambda: tvm.resnext50_32x4d(weights=None), img(), "grouped 3x3 conv (groups 32), bottleneck residuals"),
    "wide_resnet50_2": (lambda: tvm.wide_resnet50_2(weights=None), img(), "wide bottleneck residuals"),
    "vgg11": (lambda: tvm.vgg11(weights=None), img(), "plain 3x3 convs, MaxPool, AdaptiveAvgPool 7x7 (identity at 224), Flatten, 3 Gemm 25088-4096-4096-1000, Dropout"),
    "alexnet": (lambda: tvm.alexnet(weights=None), img(), "11x11 s4 conv, 5x5 conv, MaxPool 3x3 s2, AdaptiveAvgPool 6x6, Dropout, 3 Gemm"),
    "squeezenet1_0": (lambda: tvm.squeezenet1_0(weights=None), img(), "Fire modules: 1x1 squeeze, parallel 1x1/3x3 expand concatenated; ceil-mode MaxPool; conv classifier, AdaptiveAvgPool, Flatten"),
    "densenet121": (lambda: tvm.densenet121(weights=None), img(), "dense blocks (growing channel concatenation), BN-ReLU before conv (not foldable into a preceding conv), AvgPool transitions"),
    "googlenet": (lambda: tvm.googlenet(weights=None, aux_logits=False, init_weights=False), img(), "Inception modules (4 branches concatenated), ceil-mode MaxPool, BN"),
    "inception_v3": (lambda: tvm.inception_v3(weights=None, aux_logits=False, init_weights=False), img(299), "Inception A-E, asymmetric 1x7/7x1 and 1x3/3x1 convs, AvgPool 3x3 s1 branches, 299x299"),
    "mobilenet_v2": (lambda: tvm.mobilenet_v2(weights=None), img(), "inverted residuals, depthwise conv, ReLU6 (Clip)"),
    "mobilenet_v3_small": (lambda: tvm.mobilenet_v3_small(weights=None), img(), "depthwise conv, squeeze-excitation (GlobalAveragePool, 1x1 convs, Hardsigmoid, Mul), Hardswish"),
    "mobilenet_v3_large": (lambda: tvm.mobilenet_v3_large(weights=None), img(), "depthwise conv, squeeze-excitation, Hardswish/Hardsigmoid"),
    "mnasnet0_5": (lambda: tvm.mnasnet0_5(weights=None), img(), "depthwise conv, inverted residuals, mean over (H, W) instead of a pool"),
    "shufflenet_v2_x0_5": (lambda: tvm.shufflenet_v2_x0_5(weights=None), img(), "channel split (chunk), channel shuffle (Reshape-Transpose-Reshape), depthwise conv, mean over (H, W)"),
    "efficientnet_b0": (lambda: tvm.efficientnet_b0(weights=None), img(), "MBConv: depthwise conv (3x3, 5x5), squeeze-excitation, SiLU (Sigmoid Mul), stochastic depth (identity in eval)"),
    "efficientnet_v2_s": (lambda: tvm.efficientnet_v2_s(weights=None), img(), "Fused-MBConv (full 3x3 conv) then MBConv with squeeze-excitation, SiLU"),
    "regnet_x_400mf": (lambda: tvm.regnet_x_400mf(weights=None), img(), "grouped 3x3 conv (group width 16), residual bottlenecks"),
    "regnet_y_400mf": (lambda: tvm.regnet_y_400mf(weights=None), img(), "grouped 3x3 conv, squeeze-excitation"),
    "convnext_tiny": (lambda: tvm.convnext_tiny(weights=None), img(), "depthwise 7x7 conv, permute to NHWC, LayerNorm over channels, Linear on NHWC (4-D MatMul), GELU, layer scale Mul, permute back; LayerNorm2d downsampling"),
    "vit_b_16": (lambda: tvm.vit_b_16(weights=None), img(), "patch conv 16x16 s16, class token Concat, position embedding, nn.MultiheadAttention (packed in_proj, exported as MatMul + Split/Reshape), LayerNorm, GELU"),
    "swin_t": (lambda: tvm.swin_t(weights=None), img(), "shifted windows (Roll, window partition Reshape/Permute), relative position bias (Gather of a table), attention mask, patch merging (strided slices + Concat), LayerNorm, Linear on NHWC"),
    "maxvit_t": (lambda: tvm.maxvit_t(weights=None), img(), "MBConv with squeeze-excitation, block and grid attention (window partitions by Reshape/Permute), relative position bias"),
    "fcn_resnet50": (lambda: SegOut(tvs.fcn_resnet50(weights=None, weights_backbone=None, aux_loss=False)), img(), "dilated ResNet-50 (output stride 8), FCN head, bilinear Resize to the input size"),
    "deeplabv3_mobilenet_v3_large": (lambda: SegOut(tvs.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None, aux_loss=False)), img(), "dilated MobileNetV3 backbone (dilated depthwise conv), ASPP (dilated 3x3 branches + image pooling branch upsampled), bilinear Resize"),
    "lraspp_mobilenet_v3_large": (lambda: SegOut(tvs.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None)), img(), "MobileNetV3 backbone, LR-ASPP (pooled Sigmoid gate Mul), two feature levels, bilinear Resize"),
    "llama_decoder": (Llama, ("ids", (1, 128)), "token ids input, Embedding Gather, RMSNorm (Pow, ReduceMean, Sqrt/Reciprocal), rotary embeddings (slices, Neg, Concat, Mul by cos/sin buffers), causal mask Add, Q.K^T and P.V MatMuls of activations (8 heads), SwiGLU (SiLU gate Mul), untied LM head 512x4096"),
    "transformer_encoder": (TorchEncoder, ("float", (1, 64, 256)), "nn.TransformerEncoder (2 x nn.TransformerEncoderLayer, nn.MultiheadAttention with packed in_proj), post-LN, GELU, ReduceMean over tokens, Gemm head"),
    "unet": (UNet, ("float", (1, 3, 128, 128)), "GroupNorm(8) (exported as Reshape-InstanceNormalization-Reshape-Mul-Add), SiLU, MaxPool 2x2, ConvTranspose 2x2 s2, skip Concat"),
    "yolov8n": (YoloV8n, ("float", (1, 3, 256, 256)), "C2f (1x1 conv, Split in halves, chained bottlenecks, Concat), SPPF (3 chained MaxPool 5x5 s1), nearest Resize x2, PAN neck, decoupled head, 3 outputs"),
    "conformer": (Conformer, ("float", (1, 1, 256, 80)), "Conv2d subsampling, Transpose+Reshape merging (C, F), Linear, macaron FFN halves, nn.MultiheadAttention, Conv1d on (N, C, T) with Transposes from/to (N, T, d), GLU, depthwise Conv1d k=31 (groups 144) with BatchNorm1d (folded by the exporter), SiLU"),
    "mlp_mixer": (MLPMixer, img(), "patch conv, Flatten+Transpose to tokens, token mixing = Transpose then Linear over the 196 tokens, channel mixing Linear, LayerNorm, GELU, ReduceMean"),
    "rnn_tagger": (RNNTagger, ("float", (1, 50, 80)), "nn.RNN (ONNX RNN): tanh layer, then 2 bidirectional ReLU layers, batch_first, Linear per frame"),
    "seq2seq_transformer": (Seq2Seq, ("ids", (1, 40)), "nn.Transformer encoder-decoder, sequence-first, Embedding + learned positions, causal tgt_mask from generate_square_subsequent_mask (Trilu at opset 14+), vocabulary head"),
    "lrn_net": (LRNNet, img(64), "LocalResponseNorm (Pow, Pad, AveragePool, and an If on a shape for its squeeze(1)), ceil-mode MaxPool, AvgPool, Linear"),
    "cell_decoder": (CellDecoder, ("float", (1, 8, 80)), "Python loop of nn.GRUCell and nn.LSTMCell (Gemm per gate block, Split), zero initial states as constants, Linear prenet and projection, Stack"),
    "guided_denoiser": (GuidedDenoiser, ("float", (1, 4, 32, 32)), "classifier-free guidance: torch.cat([h] * 2) along the batch, a (2, C, 1, 1) parameter added, GroupNorm, SiLU, chunk(2) on the batch, guidance mix"),
    "tta_head": (TTAHead, img(64), "flip test-time augmentation (Concat of the input and its Slice step -1 on the batch), Split of a 1x1 head into 80 + 4 channels, Sigmoid, ReduceMean over 4 channels broadcast over 80, chunk on the batch, flip back"),
    "eegnet": (EEGNet, ("float", (1, 1, 64, 128)), "EEGNet: 1x64 temporal conv, depthwise conv with depth multiplier 2 (groups 8, 16 outputs, 64x1 kernel), BN, ELU, AvgPool (1,4) and (1,8), separable conv (depthwise 1x16 + 1x1), Flatten, Linear"),
    "clip_text": (ClipText, ("ids", (1, 32)), "CLIP-style text encoder: norm_first nn.TransformerEncoder with a causal float mask, end-of-text pooling x[arange(b), ids.argmax(-1)] (ArgMax, Gather at computed indices), projection"),
    "lm_scorer": (LMScorer, ("ids", (1, 24)), "Embedding of sliced ids, nn.GRU, vocabulary head, LogSoftmax, torch.gather of the next tokens' log-probabilities (GatherElements at the input ids), ReduceSum"),
    "switch_moe": (SwitchMoE, ("float", (1, 32, 128)), "top-1 mixture of experts with dense dispatch: router Linear, Softmax, ArgMax, OneHot, one gate column per expert (Slice) broadcast over its FFN's output, residual"),
    "pooled_attention": (PooledAttention, ("float", (1, 65, 96)), "MViT pooling attention: qkv unbind, torch.tensor_split of the class token (Loop, SequenceEmpty/Insert/At), depthwise stride-2 Conv2d pooling of K and V, LayerNorm, Concat, Q.K^T, softmax, P.V"),
    "bag_classifier": (BagClassifier, ("ids", (4, 16)), "nn.EmbeddingBag mean (a Loop over the bags: Slice of the ids, Gather of the table, ReduceMean, stacked scan output), Linear"),
    "gpt_decoder": (GPT, ("ids", (1, 128)), "token + position Embedding Gathers (position ids from Range/arange), QKV nn.Linear + chunk(3) (Split), causal masked_fill (Where), Q.K^T and P.V MatMuls, GELU, LM head tied to the token embedding (Transpose of the table, folded)"),
}

# Exports with other settings of torch.onnx.export than the zoo's (docs/model-import.md, "A
# user's check of exports that neither set holds"): name -> (model of MODELS, its opsets, the
# settings given to torch.onnx.export besides the zoo's, whether the model is in train() mode,
# what the file exercises). Written as `<name>_op<opset>.onnx` with the same noise, counts and
# stripping.
SETTINGS = {
    "resnet18_functions": ("resnet18", (17,), {"export_modules_as_functions": True}, False,
                           "export_modules_as_functions=True: the graph is one call of a local function (ONNX FunctionProto, domain torchvision.models.resnet), nested calls of Sequential/BasicBlock/Conv2d functions with attribute references (Conv's pads, strides, kernel_shape)"),
    "transformer_encoder_functions": ("transformer_encoder", (17,), {"export_modules_as_functions": True}, False,
                                      "export_modules_as_functions=True on nn.TransformerEncoder: nested local functions (TransformerEncoderLayer, MultiheadAttention's Linear, LayerNorm), shape arithmetic inside them"),
    "resnet18_training": ("resnet18", (13, 17), {"training": torch.onnx.TrainingMode.TRAINING}, True,
                          "training=TrainingMode.TRAINING, model in train(): 20 BatchNormalization with batch statistics (opset 13: 5 outputs; 17: training_mode=1 and the running statistics as outputs), not folded into the convs"),
    "transformer_encoder_training": ("transformer_encoder", (11, 13, 17), {"training": torch.onnx.TrainingMode.TRAINING}, True,
                                     "training=TrainingMode.TRAINING, model in train(): 8 Dropout nodes (p=0.1; opset 13, 17: ratio and training_mode=True inputs; opset 11: the mask output)"),
}


# ---------------------------------------------------------------- counting

def _numel(shape):
    n = 1
    for s in shape:
        n *= int(s)
    return n


class MacCounter(TorchDispatchMode):
    """Σ M·K·N of the matmuls and convolutions of one forward pass, split by whether one
    operand is a parameter (weight_macs) or both are activations (act_macs)."""

    def __init__(self, param_storages):
        super().__init__()
        self.param_storages = param_storages
        self.by_op = {}
        self.weight_macs = 0
        self.act_macs = 0
        self.conv_macs = 0

    def _is_param(self, t):
        return t.storage().data_ptr() in self.param_storages

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func.overloadpacket.__name__
        macs, operands = None, ()
        if name in ("mm", "addmm"):
            a, b = (args[0], args[1]) if name == "mm" else (args[1], args[2])
            macs, operands = a.shape[0] * a.shape[1] * b.shape[1], (a, b)
        elif name in ("bmm", "baddbmm"):
            a, b = (args[0], args[1]) if name == "bmm" else (args[1], args[2])
            macs, operands = a.shape[0] * a.shape[1] * a.shape[2] * b.shape[2], (a, b)
        elif name == "mv":
            macs, operands = args[0].shape[0] * args[0].shape[1], (args[0], args[1])
        elif name == "dot":
            macs, operands = args[0].shape[0], (args[0], args[1])
        elif name in ("convolution", "_convolution"):
            x, w = args[0], args[1]
            transposed = args[6]
            if transposed:   # weight (Cin, Cout/groups, k...): every input element meets every tap
                macs = x.numel() * w.shape[1] * _numel(w.shape[2:])
            else:            # weight (Cout, Cin/groups, k...)
                macs = out.numel() * w.shape[1] * _numel(w.shape[2:])
            self.conv_macs += macs
        elif name in ("matmul", "linear", "einsum", "addbmm", "addmv", "_native_multi_head_attention",
                      "_transformer_encoder_layer_fwd", "conv2d", "conv1d"):
            raise RuntimeError(f"uncounted matmul-like op {name}: counter incomplete")
        if macs is not None:
            self.by_op[name] = self.by_op.get(name, 0) + macs
            if operands:
                if any(self._is_param(t) for t in operands):
                    self.weight_macs += macs
                else:
                    self.act_macs += macs
        return out


def hook_macs(model, example):
    """MACs of the weight-carrying modules from their input/output shapes: Conv, ConvTranspose,
    Linear, RNN/LSTM/GRU (without proj_size) and their cells, and MultiheadAttention's projections (its
    functional forward bypasses the Linear modules); batch 1."""
    total = [0]
    handles = []
    wrapped = []

    def conv_hook(m, inp, out):
        total[0] += out.numel() * (m.in_channels // m.groups) * _numel(m.kernel_size)

    def convt_hook(m, inp, out):
        total[0] += inp[0].numel() * (m.out_channels // m.groups) * _numel(m.kernel_size)

    def linear_hook(m, inp, out):
        total[0] += out.numel() * m.in_features

    def rnn_hook(m, inp, out):
        # per layer and direction, every step multiplies the input and the hidden state by the
        # gates' blocks (torch's count includes the first step's product with the zero state)
        x = inp[0]
        steps, batch = (x.shape[1], x.shape[0]) if m.batch_first else (x.shape[0], x.shape[1])
        gates = {"LSTM": 4, "GRU": 3}.get(m.mode, 1)
        dirs = 2 if m.bidirectional else 1
        for layer in range(m.num_layers):
            width = m.input_size if layer == 0 else m.hidden_size * dirs
            total[0] += dirs * steps * batch * gates * m.hidden_size * (width + m.hidden_size)

    def cell_hook(m, inp, out):
        gates = {nn.LSTMCell: 4, nn.GRUCell: 3}.get(type(m), 1)
        total[0] += inp[0].shape[0] * gates * m.hidden_size * (m.input_size + m.hidden_size)

    def mha_forward(m):
        # forward hooks see positional arguments only, and torchvision passes query/key/value
        # by keyword: wrap the instance's forward instead
        original = m.forward

        def forward(*args, **kwargs):
            q, k, v = (list(args) + [kwargs.get(n) for n in ("query", "key", "value")
                                     if n in kwargs])[:3]
            e = m.embed_dim
            total[0] += q.numel() * e + k.numel() * e + v.numel() * e + q.numel() * e
            return original(*args, **kwargs)
        m.forward = forward
        return original

    def swin_hook(m, inp, out):
        # torchvision's shifted_window_attention applies F.linear to qkv.weight/proj.weight
        # directly, on the input padded to whole windows
        b, h, w, c = inp[0].shape
        ws = m.window_size
        rows = b * (h + (ws[0] - h % ws[0]) % ws[0]) * (w + (ws[1] - w % ws[1]) % ws[1])
        total[0] += rows * c * m.qkv.out_features + rows * m.proj.in_features * m.proj.out_features

    swin_attention = torchvision.models.swin_transformer.ShiftedWindowAttention
    for mod in model.modules():
        if isinstance(mod, swin_attention):
            handles.append(mod.register_forward_hook(swin_hook))
        if isinstance(mod, nn.RNNBase):
            handles.append(mod.register_forward_hook(rnn_hook))
        if isinstance(mod, nn.RNNCellBase):
            handles.append(mod.register_forward_hook(cell_hook))
        if isinstance(mod, (nn.Conv1d, nn.Conv2d, nn.Conv3d)):
            handles.append(mod.register_forward_hook(conv_hook))
        elif isinstance(mod, (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)):
            handles.append(mod.register_forward_hook(convt_hook))
        elif isinstance(mod, nn.MultiheadAttention):
            wrapped.append((mod, mha_forward(mod)))
        elif isinstance(mod, nn.Linear) and not isinstance(
                mod, nn.modules.linear.NonDynamicallyQuantizableLinear):
            handles.append(mod.register_forward_hook(linear_hook))
    # NonDynamicallyQuantizableLinear is MultiheadAttention's out_proj, counted by mha_forward
    # (it is never called as a module); swin's qkv and proj Linears are never called either.
    try:
        model(example)
    finally:
        for h in handles:
            h.remove()
        for mod, original in wrapped:
            mod.forward = original
    return total[0]


# ---------------------------------------------------------------- export and strip

def add_noise(model):
    g = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():
        for t in list(model.parameters()) + list(model.buffers()):
            if not t.is_floating_point():
                continue
            u = torch.rand(t.shape, generator=g) * 2 - 1
            t.mul_(1 + 0.01 * u)
            t.copy_(torch.where(t == 0, 1e-3 * u, t))


def _strip_tensor(t):
    """Clears the data of a tensor except small integer ones and scalars; True if kept."""
    n = _numel(t.dims)
    if (t.data_type in INT_TYPES and n <= KEEP_DATA_MAX_ELEMENTS) or len(t.dims) == 0:
        return True
    for field in ("raw_data", "float_data", "int32_data", "int64_data", "double_data",
                  "uint64_data", "string_data"):
        t.ClearField(field)
    return False


def strip(model_proto):
    """Initializers keep name/dims/data_type; data only for small integer tensors and scalars.
    With local functions (export_modules_as_functions), every call also carries its module's
    parameters as tensor attributes, which no function body reads: their data goes the same way."""
    kept = sum(_strip_tensor(t) for t in model_proto.graph.initializer)
    local = {(f.domain, f.name) for f in model_proto.functions}
    for nodes in [model_proto.graph.node] + [f.node for f in model_proto.functions]:
        for node in nodes:
            if (node.domain, node.op_type) in local:
                for a in node.attribute:
                    if a.type == onnx.AttributeProto.TENSOR:
                        _strip_tensor(a.t)
    return kept


def float_params(model_proto):
    return sum(_numel(t.dims) for t in model_proto.graph.initializer
               if t.data_type in FLOAT_TYPES and len(t.dims) >= 1)


def dims_of(value_info):
    tt = value_info.type.tensor_type
    if not tt.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in tt.shape.dim]


def inference_check(model_proto):
    """Infer from scratch (value_info dropped, data propagation on) and report whether every
    graph output gets a static shape. The graph outputs keep the shapes the exporter wrote, so a
    symbolic dim there (swin_t) stays symbolic."""
    m = onnx.ModelProto()
    m.CopyFrom(model_proto)
    del m.graph.value_info[:]
    try:
        inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True, data_prop=True)
        mode = "strict"
    except Exception as e:  # noqa: BLE001 - the message is the result
        inferred = onnx.shape_inference.infer_shapes(m)
        mode = "non-strict (strict: " + str(e).splitlines()[0][:200] + ")"
    outs = [dims_of(o) for o in inferred.graph.output]
    static = all(o is not None and all(isinstance(d, int) and d > 0 for d in o) for o in outs)
    return {"inference": mode, "outputs": outs, "outputs_static": static,
            "value_info": len(inferred.graph.value_info)}


def make_input(spec):
    kind, shape = spec
    g = torch.Generator().manual_seed(SEED + 2)
    if kind == "ids":
        return torch.randint(0, 1000, shape, generator=g)
    return torch.randn(shape, generator=g)


def export_one(name, opsets, outdir):
    settings, train = {}, False
    if name in SETTINGS:
        base, own_opsets, settings, train, constructs = SETTINGS[name]
        opsets = [o for o in opsets if o in own_opsets] if opsets else list(own_opsets)
        ctor, spec, _ = MODELS[base]
    else:
        ctor, spec, constructs = MODELS[name]
        opsets = opsets or [13, 17]
    torch.manual_seed(SEED)
    model = ctor().eval()
    add_noise(model)
    if train:
        model.train()
    example = make_input(spec)
    torch_params = sum(p.numel() for p in model.parameters())
    with torch.enable_grad():   # the MHA/TransformerEncoder fast path has no ONNX export
        hooks = hook_macs(model, example)
        params_storages = {p.storage().data_ptr() for p in model.parameters()}
        counter = MacCounter(params_storages)
        with counter:
            model(example)
    macs = counter.weight_macs + counter.act_macs + counter.conv_macs
    hook_ok = (counter.weight_macs + counter.conv_macs) == hooks
    results = {}
    for opset in opsets:
        fname = f"{name}_op{opset}.onnx"
        t0 = time.time()
        buf = io.BytesIO()
        try:
            with torch.enable_grad():
                torch.onnx.export(model, example, buf, opset_version=opset,
                                  do_constant_folding=True, input_names=["input"], **settings)
        except Exception as e:  # noqa: BLE001 - reported, the others go on
            results[fname] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"}
            if os.path.exists(os.path.join(outdir, fname)):   # no stale file from an older run
                os.remove(os.path.join(outdir, fname))
            print(f"{fname}: EXPORT FAILED {results[fname]['error']}", flush=True)
            continue
        proto = onnx.load_model_from_string(buf.getvalue())
        full_bytes = len(buf.getvalue())
        kept = strip(proto)
        check = inference_check(proto)
        data = proto.SerializeToString()
        with open(os.path.join(outdir, fname), "wb") as f:
            f.write(data)
        ops = {}
        for n in proto.graph.node:
            ops[n.op_type] = ops.get(n.op_type, 0) + 1
        entry = {
            "macs": macs,
            "params": float_params(proto),
            "torch_params": torch_params,
            "input": list(spec[1]),
            "input_dtype": "int64" if spec[0] == "ids" else "float32",
            "opset": opset,
            "weight_macs": counter.weight_macs + counter.conv_macs,
            "act_macs": counter.act_macs,
            "hook_macs": hooks,
            "hook_check": "equal" if hook_ok else "DIFFERS",
            "file_bytes": len(data),
            "unstripped_bytes": full_bytes,
            "initializers_with_data": kept,
            "nodes": len(proto.graph.node),
            "identity_nodes": ops.get("Identity", 0),
            "shape_inference": check["inference"],
            "outputs_static": check["outputs_static"],
            "outputs": check["outputs"],
            "op_types": " ".join(f"{k}:{v}" for k, v in sorted(ops.items())),
            "constructs": constructs,
            **({"export_settings": ", ".join(f"{k}={v}" for k, v in settings.items())
                + (", model.train()" if train else "")} if settings else {}),
            "dispatch_ops": " ".join(f"{k}:{v}" for k, v in sorted(counter.by_op.items())),
        }
        results[fname] = entry
        print(f"{fname}: {len(data):,} B (unstripped {full_bytes:,}), macs {macs:,} "
              f"(hooks {hook_ok}), params {entry['params']:,} / torch {torch_params:,}, "
              f"{len(proto.graph.node)} nodes, identity {entry['identity_nodes']}, "
              f"inference {check['inference'][:40]} static={check['outputs_static']}, "
              f"{time.time() - t0:.1f} s", flush=True)
    return results


def problem_macs(problem_path, map_path):
    """Σ M·K·N of the problem's MatMul ops whose map role is matmul, conv or conv-tap."""
    with open(problem_path) as f:
        prob = json.load(f)
    with open(map_path) as f:
        roles = {o["op"]: o["role"] for o in json.load(f)["ops"]}
    total = 0
    for i, kind in enumerate(prob["op_types"]):
        if kind != "MatMul" or roles.get(i) not in ("matmul", "conv", "conv-tap"):
            continue
        lhs, rhs = prob["inputs"][i][:2]
        total += prob["heights"][lhs] * prob["widths"][lhs] * prob["widths"][rhs]
    return total


TABLE_BEGIN = "<!-- import table: export_torch.py --import-table writes from here -->"
TABLE_END = "<!-- end of import table -->"


def import_table(outdir, annealer, hardware="tpu-v5e"):
    """Runs `annealer import` on every file of expected.json; returns the markdown table."""
    import subprocess
    import tempfile
    with open(os.path.join(outdir, "expected.json")) as f:
        expected = json.load(f)
    rows = ["| model | opset | import | problem MACs | depthwise MACs | torch MACs | "
            "(problem + depthwise) / torch |", "|---|---:|---|---:|---:|---:|---:|"]
    ok = 0
    with tempfile.TemporaryDirectory() as tmp:
        for fname, e in expected.items():
            prob, mp = os.path.join(tmp, "p.json"), os.path.join(tmp, "m.json")
            for path in (prob, mp):
                if os.path.exists(path):
                    os.remove(path)
            # run in OUTDIR on the bare file name: the error lines then hold no machine path
            r = subprocess.run([annealer, "import", fname, "--hardware",
                                hardware, "--json", "-o", prob, "--map", mp],
                               capture_output=True, text=True, cwd=outdir)
            model = fname[: -len(f"_op{e['opset']}.onnx")]
            if r.returncode != 0:
                lines = [ln for ln in (r.stderr + r.stdout).splitlines() if ln.strip()]
                err = lines[0] if lines else f"exit {r.returncode}, no message"
                err = err.replace("|", "\\|")
                rows.append(f"| {model} | {e['opset']} | `{err}` | | | {e['macs']:,} | |")
                print(f"{fname}: FAIL {err}", flush=True)
                continue
            ok += 1
            pm = problem_macs(prob, mp)
            # depthwise convs are vector work (Pointwise ops), reported apart by the importer
            summary = json.loads(r.stdout)
            dw = summary["depthwise_macs"]
            ratio = "exact" if pm + dw == e["macs"] else f"{(pm + dw) / e['macs']:.6f}"
            note = "" if pm == summary["macs"] else f" (importer's summary says {summary['macs']:,})"
            rows.append(f"| {model} | {e['opset']} | ok | {pm:,}{note} | {dw:,} | {e['macs']:,} | "
                        f"{ratio} |")
            print(f"{fname}: ok {pm:,} + {dw:,} vs {e['macs']:,} {ratio}{note}", flush=True)
    summary = f"{ok} of {len(expected)} files import (`annealer import FILE --hardware {hardware}`)."
    return summary, "\n".join(rows)


def zoo_table(outdir):
    """The exported files with torch's counts (from expected.json alone)."""
    with open(os.path.join(outdir, "expected.json")) as f:
        expected = json.load(f)
    rows = ["| file | input | bytes | nodes | torch MACs | of which act x act | params (file) | "
            "torch params |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for fname, e in expected.items():
        shape = "x".join(str(d) for d in e["input"]) + (" ids" if e["input_dtype"] == "int64" else "")
        rows.append(f"| {fname} | {shape} | {e['file_bytes']:,} | {e['nodes']} | {e['macs']:,} | "
                    f"{e['act_macs']:,} | {e['params']:,} | {e['torch_params']:,} |")
    total = sum(e["file_bytes"] for e in expected.values())
    return f"{len(expected)} files, {total:,} bytes in all.", "\n".join(rows)


def write_table(outdir, annealer):
    zsummary, ztable = zoo_table(outdir)
    summary, table = import_table(outdir, os.path.abspath(annealer))
    summary = f"{summary}\n\n{table}\n\n### The files\n\n{zsummary}\n\n{ztable}"
    table = ""
    readme = os.path.join(outdir, "README.md")
    text = open(readme).read() if os.path.exists(readme) else ""
    block = f"{TABLE_BEGIN}\n{summary}\n{TABLE_END}"
    if TABLE_BEGIN in text and TABLE_END in text:
        head, rest = text.split(TABLE_BEGIN, 1)
        text = head + block + rest.split(TABLE_END, 1)[1]
    else:
        text = text + "\n" + block + "\n"
    with open(readme, "w") as f:
        f.write(text)
    print(summary.splitlines()[0])


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(dict(sorted(obj.items())), f, indent=1, sort_keys=True)
        f.write("\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", nargs="?", default=os.path.join(here, "torch"))
    ap.add_argument("--only", default="", help="comma-separated model names (default: all)")
    ap.add_argument("--opsets", default="",
                    help="default: 13,17 for the models, each export setting's own opsets")
    ap.add_argument("--import-table", metavar="ANNEALER",
                    help="export nothing: run ANNEALER import on every file of OUTDIR/expected.json "
                         "and write the result table into OUTDIR/README.md")
    args = ap.parse_args()
    if args.import_table:
        write_table(args.outdir, args.import_table)
        return
    names = [n for n in args.only.split(",") if n] or list(MODELS) + list(SETTINGS)
    unknown = [n for n in names if n not in MODELS and n not in SETTINGS]
    if unknown:
        sys.exit(f"export_torch.py: unknown model {unknown[0]} (known: {', '.join(list(MODELS) + list(SETTINGS))})")
    opsets = [int(o) for o in args.opsets.split(",") if o]
    os.makedirs(args.outdir, exist_ok=True)
    torch.set_num_threads(1)   # shared machine; also keeps the forward pass deterministic
    expected_path = os.path.join(args.outdir, "expected.json")
    expected = {}
    if os.path.exists(expected_path):
        with open(expected_path) as f:
            expected = json.load(f)
    failures_path = os.path.join(args.outdir, "export_failures.json")
    failures = {}
    if os.path.exists(failures_path):
        with open(failures_path) as f:
            failures = json.load(f)
    for name in names:
        try:
            results = export_one(name, opsets, args.outdir)
        except Exception as e:  # noqa: BLE001 - a model that cannot even run is reported
            err = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
            print(f"{name}: FAILED before export: {err}", flush=True)
            results = {f"{name}_op{o}.onnx": {"error": err}
                       for o in (opsets or (SETTINGS[name][1] if name in SETTINGS else [13, 17]))}
        for fname, entry in results.items():
            if "error" in entry:
                failures[fname] = entry["error"]
                expected.pop(fname, None)
            else:
                expected[fname] = entry
                failures.pop(fname, None)
        write_json(expected_path, expected)   # after every model: a crash keeps the rest
        write_json(failures_path, failures)
    total = sum(os.path.getsize(os.path.join(args.outdir, k)) for k in expected
                if os.path.exists(os.path.join(args.outdir, k)))
    print(f"{len(expected)} files, {total:,} bytes; {len(failures)} export failures")


if __name__ == "__main__":
    main()
