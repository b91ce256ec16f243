"""Small and medium torch modules a user writes and exports (bench/heldout/heldout_exports.py's
"user_*" cases): nn.Transformer encoder/decoder layers (batch_first, norm_first, masks),
nn.MultiheadAttention (kdim/vdim, padding masks, need_weights, bias_kv), GPT-2, LLaMA and BERT
blocks by hand (GELU tanh, RMSNorm, rotary embeddings, einsum, grouped-query attention), Conv1d,
Conv3d, ConvTranspose 1-D to 3-D, grouped and dilated convolutions, GroupNorm, InstanceNorm,
BatchNorm1d, Upsample and interpolate (nearest, linear, bilinear, trilinear), PixelShuffle,
adaptive and ceil-mode pooling, Linear on 3-D/4-D inputs, matmul with broadcasting and 1-D
operands, bmm, chunk/split/stack/permute, softmax on every axis, reductions, arg-max, top-k,
cumsum, LSTM and GRU, comparisons and scatters into activations. Random initialisation only."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class EncBF(nn.Module):
    def __init__(self, batch_first=True, norm_first=False, act="relu"):
        super().__init__()
        layer = nn.TransformerEncoderLayer(128, 4, 256, dropout=0.1, batch_first=batch_first, norm_first=norm_first, activation=act)
        self.enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(128))
        self.bf = batch_first
    def forward(self, x):          # x: (B, S, D)
        if not self.bf:
            x = x.transpose(0, 1)
        y = self.enc(x)
        return y


class EncMask(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(128, 4, 256, dropout=0.0, batch_first=True, activation="gelu")
        self.enc = nn.TransformerEncoder(layer, 2)
        self.register_buffer("causal", torch.triu(torch.full((32, 32), float("-inf")), 1))
    def forward(self, x):
        return self.enc(x, mask=self.causal)


class Dec(nn.Module):
    def __init__(self, batch_first=True, norm_first=False):
        super().__init__()
        layer = nn.TransformerDecoderLayer(128, 4, 256, dropout=0.1, batch_first=batch_first, norm_first=norm_first)
        self.dec = nn.TransformerDecoder(layer, 2)
        self.bf = batch_first
        self.register_buffer("causal", torch.triu(torch.full((16, 16), float("-inf")), 1))
    def forward(self, tgt, mem):   # tgt (B, 16, D), mem (B, 32, D)
        if not self.bf:
            tgt, mem = tgt.transpose(0, 1), mem.transpose(0, 1)
        return self.dec(tgt, mem, tgt_mask=self.causal)


class FullTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.t = nn.Transformer(128, 4, 2, 2, 256, batch_first=True)
    def forward(self, src, tgt):
        return self.t(src, tgt)


class MHAKV(nn.Module):
    def __init__(self, need_weights=True):
        super().__init__()
        self.mha = nn.MultiheadAttention(128, 4, kdim=96, vdim=64, batch_first=True)
        self.nw = need_weights
    def forward(self, q, k, v):
        out, w = self.mha(q, k, v, need_weights=self.nw)
        return (out, w) if self.nw else out


class MHAMask(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(128, 8)
        self.register_buffer("causal", torch.triu(torch.ones(32, 32, dtype=torch.bool), 1))
    def forward(self, x):   # (S, B, D)
        out, _ = self.mha(x, x, x, attn_mask=self.causal, need_weights=False)
        return out


class MHAPad(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(128, 4, batch_first=True)
    def forward(self, x, pad):   # pad (B, S) bool
        out, w = self.mha(x, x, x, key_padding_mask=pad, need_weights=True, average_attn_weights=False)
        return out, w


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.w = nn.Parameter(torch.ones(d))
        self.eps = eps
    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.w


class GPT2Block(nn.Module):
    def __init__(self, d=128, h=4, T=32):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.fc, self.proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.register_buffer("bias", torch.tril(torch.ones(T, T)).view(1, 1, T, T))
    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(self.ln1(x)).split(C, dim=2)
        q = q.view(B, T, self.h, C // self.h).transpose(1, 2)
        k = k.view(B, T, self.h, C // self.h).transpose(1, 2)
        v = v.view(B, T, self.h, C // self.h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.c_proj(y)
        x = x + self.proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))
        return x


class GPT2(nn.Module):
    def __init__(self, vocab=1000, d=128, T=32, L=2):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(T, d)
        self.blocks = nn.ModuleList(GPT2Block(d, 4, T) for _ in range(L))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
    def forward(self, ids):
        T = ids.size(1)
        x = self.wte(ids) + self.wpe(torch.arange(T, device=ids.device))
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class RotaryBlock(nn.Module):
    """LLaMA-ish block: RMSNorm, rotary embeddings, einsum attention, SwiGLU."""
    def __init__(self, d=128, h=4, T=32):
        super().__init__()
        self.h, self.hd = h, d // h
        self.n1, self.n2 = RMSNorm(d), RMSNorm(d)
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.w1, self.w3 = nn.Linear(d, 256, bias=False), nn.Linear(d, 256, bias=False)
        self.w2 = nn.Linear(256, d, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        t = torch.arange(T).float()
        freqs = torch.einsum("i,j->ij", t, inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos())
        self.register_buffer("sin", emb.sin())
    def forward(self, x):
        B, T, C = x.shape
        y = self.n1(x)
        q = self.wq(y).view(B, T, self.h, self.hd)
        k = self.wk(y).view(B, T, self.h, self.hd)
        v = self.wv(y).view(B, T, self.h, self.hd)
        cos, sin = self.cos[:T, None, :], self.sin[:T, None, :]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        s = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(self.hd)
        p = s.softmax(-1)
        o = torch.einsum("bhqk,bkhd->bqhd", p, v).reshape(B, T, C)
        x = x + self.wo(o)
        y = self.n2(x)
        return x + self.w2(F.silu(self.w1(y)) * self.w3(y))


class BertBlockEinsum(nn.Module):
    def __init__(self, d=128, h=4):
        super().__init__()
        self.h, self.hd = h, d // h
        self.qkv = nn.Linear(d, 3 * d)
        self.o = nn.Linear(d, d)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ff1, self.ff2 = nn.Linear(d, 512), nn.Linear(512, d)
    def forward(self, x, mask):   # mask (B, S) float of 0/1
        B, S, C = x.shape
        q, k, v = self.qkv(x).reshape(B, S, 3, self.h, self.hd).permute(2, 0, 3, 1, 4).unbind(0)
        s = torch.einsum("bhid,bhjd->bhij", q, k) * self.hd ** -0.5
        s = s + (1.0 - mask[:, None, None, :]) * -10000.0
        p = s.softmax(dim=-1)
        o = torch.einsum("bhij,bhjd->bhid", p, v).transpose(1, 2).reshape(B, S, C)
        x = self.ln1(x + self.o(o))
        return self.ln2(x + self.ff2(F.gelu(self.ff1(x))))


class Conv1dNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(40, 64, 5, padding=2)
        self.b1 = nn.BatchNorm1d(64)
        self.c2 = nn.Conv1d(64, 64, 3, padding=2, dilation=2)
        self.c3 = nn.Conv1d(64, 128, 3, stride=2, groups=4)
        self.b3 = nn.BatchNorm1d(128)
        self.c4 = nn.Conv1d(128, 128, 7, padding=3, groups=128)
        self.pool = nn.AdaptiveAvgPool1d(1)
        self.fc = nn.Linear(128, 10)
    def forward(self, x):
        x = F.relu(self.b1(self.c1(x)))
        x = F.relu(self.c2(x))
        x = F.silu(self.b3(self.c3(x)))
        x = x + self.c4(x)
        return self.fc(self.pool(x).flatten(1))


class Conv3dNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv3d(3, 16, 3, padding=1)
        self.b1 = nn.BatchNorm3d(16)
        self.p = nn.MaxPool3d(2)
        self.c2 = nn.Conv3d(16, 32, (1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1))
        self.c3 = nn.Conv3d(32, 32, 3, padding=2, dilation=2, groups=2)
        self.pool = nn.AdaptiveAvgPool3d(1)
        self.fc = nn.Linear(32, 5)
    def forward(self, x):
        x = self.p(F.relu(self.b1(self.c1(x))))
        x = F.relu(self.c2(x))
        x = F.hardswish(self.c3(x))
        return self.fc(self.pool(x).flatten(1))


class ConvT2d(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 32, 3, padding=1)
        self.t1 = nn.ConvTranspose2d(32, 16, 4, stride=2, padding=1)
        self.t2 = nn.ConvTranspose2d(16, 16, 3, stride=2, padding=1, output_padding=1, groups=4)
        self.t3 = nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.d = nn.Conv2d(8, 8, 3, padding=2, dilation=2)
    def forward(self, x):
        x = F.relu(self.c(x))
        x = F.relu(self.t1(x))
        x = F.mish(self.t2(x))
        return self.d(self.t3(x))


class NormNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 32, 3, padding=1)
        self.g = nn.GroupNorm(8, 32)
        self.c2 = nn.Conv2d(32, 32, 3, padding=1, groups=8)
        self.i = nn.InstanceNorm2d(32, affine=True)
        self.c3 = nn.Conv2d(32, 16, 1)
        self.i2 = nn.InstanceNorm2d(16)
        self.fc = nn.Linear(16 * 8 * 8, 64)
        self.bn = nn.BatchNorm1d(64)
        self.fc2 = nn.Linear(64, 10)
    def forward(self, x):
        x = F.silu(self.g(self.c1(x)))
        x = F.relu(self.i(self.c2(x)))
        x = self.i2(self.c3(x))
        x = F.adaptive_avg_pool2d(x, 8)
        x = F.relu(self.bn(self.fc(x.flatten(1))))
        return self.fc2(x)


class UpNet(nn.Module):
    def __init__(self, mode="nearest", align=None):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.up = nn.Upsample(scale_factor=2, mode=mode, align_corners=align)
        self.c2 = nn.Conv2d(16, 16, 3, padding=1)
        self.ps = nn.PixelShuffle(2)
        self.c3 = nn.Conv2d(4, 8, 3, padding=1)
        self.pu = nn.PixelUnshuffle(2)
    def forward(self, x):
        y = F.relu(self.c1(x))
        y = self.up(y)
        y = self.c2(y)
        y = self.c3(self.ps(y))
        y = F.interpolate(y, size=(20, 24), mode="bilinear", align_corners=False)
        return self.pu(y)


class PoolNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3)
        self.mp = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self.c2 = nn.Conv2d(16, 32, 3, padding=1)
        self.ap = nn.AdaptiveAvgPool2d((5, 5))
        self.mp2 = nn.MaxPool2d(2, ceil_mode=True)
        self.ap2 = nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
        self.fc = nn.Linear(32 * 5 * 5 + 32, 10)
    def forward(self, x):   # 1x3x33x33
        x = self.mp(F.relu(self.c1(x)))    # 31 -> 15
        x = F.relu(self.c2(x))
        a = self.ap(x)                     # 15 -> 5
        b = self.mp2(self.ap2(x))          # 15 -> 8 -> 4
        b = F.adaptive_max_pool2d(b, 1)
        return self.fc(torch.cat([a.flatten(1), b.flatten(1)], 1))


class LinearND(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(32, 64)
        self.l2 = nn.Linear(64, 16)
        self.w = nn.Parameter(torch.randn(16, 24))
    def forward(self, x):   # (2, 3, 10, 32)
        y = F.gelu(self.l1(x))
        y = self.l2(y)                      # (2,3,10,16)
        z = torch.matmul(y, self.w)         # (2,3,10,24)
        return z


class MatmulBroadcast(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(32, 32)
    def forward(self, a, b):   # a (2, 4, 8, 32), b (2, 1, 32, 16)
        a = self.l(a)
        c = torch.matmul(a, b)              # (2,4,8,16) broadcast over heads
        d = torch.bmm(c.flatten(0, 1), c.flatten(0, 1).transpose(1, 2))   # (8, 8, 8)
        return c, d


class Shuffle(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(64, 96)
        self.m = nn.Linear(32, 32)
        self.o = nn.Linear(64, 16)
    def forward(self, x):   # (1, 10, 64)
        y = self.l(x)
        a, b, c = y.chunk(3, dim=-1)          # 32 each
        d, e = torch.split(y, [40, 56], dim=-1)
        s = torch.stack([a, b, c], dim=1)    # (1,3,10,32)
        s = self.m(s).permute(0, 2, 1, 3).flatten(2)   # (1,10,96)
        t = torch.cat([s[..., :64], torch.cat([a, b], -1).unsqueeze(1).squeeze(1) * 2], dim=1)   # (1, 20, 64)
        u = F.softmax(t, dim=1) + F.softmax(t, dim=-1)
        return self.o(u), d.sum(-1), e.mean(1)


class SoftmaxDims(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(8, 16, 1)
        self.l = nn.Linear(16, 16)
    def forward(self, x):   # (1, 8, 6, 10)
        y = self.c(x)
        a = F.softmax(y, dim=1)
        b = F.softmax(y, dim=2)
        c = F.log_softmax(y, dim=-1)
        z = self.l(y.flatten(2).transpose(1, 2))   # (1, 60, 16)
        d = F.softmax(z, dim=0)
        return a + b + c, d


class Acts(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(64, 64)
        self.l2 = nn.Linear(64, 64)
    def forward(self, x):
        y = self.l1(x)
        y = F.silu(y) + F.mish(y) + F.hardswish(y) + F.hardsigmoid(y) + F.gelu(y, approximate="tanh") + F.elu(y) + F.softplus(y) + F.leaky_relu(y) + F.selu(y) + F.relu6(y) + F.celu(y) + torch.sigmoid(y) * torch.tanh(y) + F.prelu(y, torch.full((1,), 0.25))
        return self.l2(y)


class LSTMNet(nn.Module):
    def __init__(self, bidir=False):
        super().__init__()
        self.lstm = nn.LSTM(40, 64, num_layers=2, batch_first=True, bidirectional=bidir)
        self.fc = nn.Linear(128 if bidir else 64, 10)
    def forward(self, x):
        y, _ = self.lstm(x)
        return self.fc(y[:, -1])


class GRUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(40, 64, batch_first=False)
        self.fc = nn.Linear(64, 10)
    def forward(self, x):
        y, h = self.gru(x)
        return self.fc(h[-1])



class GQA(nn.Module):
    """LLaMA-2/3 grouped-query attention: 8 query heads, 2 kv heads, repeat_kv by expand+reshape."""
    def __init__(self, d=128, hq=8, hkv=2):
        super().__init__()
        self.hq, self.hkv, self.hd = hq, hkv, d // hq
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, hkv * self.hd, bias=False)
        self.v = nn.Linear(d, hkv * self.hd, bias=False)
        self.o = nn.Linear(d, d, bias=False)
    def forward(self, x):
        B, T, C = x.shape
        q = self.q(x).view(B, T, self.hq, self.hd).transpose(1, 2)
        k = self.k(x).view(B, T, self.hkv, self.hd).transpose(1, 2)
        v = self.v(x).view(B, T, self.hkv, self.hd).transpose(1, 2)
        n = self.hq // self.hkv
        k = k[:, :, None, :, :].expand(B, self.hkv, n, T, self.hd).reshape(B, self.hq, T, self.hd)
        v = v[:, :, None, :, :].expand(B, self.hkv, n, T, self.hd).reshape(B, self.hq, T, self.hd)
        s = (q @ k.transpose(2, 3)) / math.sqrt(self.hd)
        p = F.softmax(s.float(), dim=-1).type_as(q)
        o = (p @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.o(o)


class GQARepeatInterleave(nn.Module):
    def __init__(self, d=128, hq=8, hkv=2):
        super().__init__()
        self.hq, self.hkv, self.hd = hq, hkv, d // hq
        self.q = nn.Linear(d, d)
        self.kv = nn.Linear(d, 2 * hkv * self.hd)
        self.o = nn.Linear(d, d)
    def forward(self, x):
        B, T, C = x.shape
        q = self.q(x).view(B, T, self.hq, self.hd).transpose(1, 2)
        k, v = self.kv(x).view(B, T, 2, self.hkv, self.hd).permute(2, 0, 3, 1, 4)
        k = torch.repeat_interleave(k, self.hq // self.hkv, dim=1)
        v = torch.repeat_interleave(v, self.hq // self.hkv, dim=1)
        p = (q @ k.transpose(-1, -2) * self.hd ** -0.5).softmax(-1)
        return self.o((p @ v).transpose(1, 2).reshape(B, T, C))


class LN2D(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(32, 32)
        self.ln = nn.LayerNorm((16, 32))
        self.ln_noaff = nn.LayerNorm(32, elementwise_affine=False)
    def forward(self, x):   # (2, 16, 32)
        return self.l(self.ln(x))


class ArgmaxHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(64, 100)
    def forward(self, x):   # (1, 8, 64)
        logits = self.l(x)
        return logits, logits.argmax(-1), logits.max(-1).values


class WhereAct(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(32, 32), nn.Linear(32, 32)
    def forward(self, x):
        a, b = self.a(x), self.b(x)
        return torch.where(a > b, a, b * 0.5) + torch.clamp(a, min=-1.0, max=1.0) + a.abs().sqrt()


class PadModes(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 4, padding=2)
        self.c2 = nn.Conv2d(16, 16, 3, padding=1, padding_mode="reflect")
        self.c3 = nn.Conv2d(16, 16, 3, padding=1, padding_mode="circular")
        self.c4 = nn.Conv2d(16, 16, 3, padding=1, padding_mode="replicate")
        self.c5 = nn.Conv2d(16, 32, 2, stride=2)
    def forward(self, x):
        x = F.relu(self.c1(x))
        x = self.c2(x) + self.c3(x)
        x = F.pad(self.c4(x), (1, 0, 1, 0))
        return self.c5(x)


class ConvT13(nn.Module):
    def __init__(self):
        super().__init__()
        self.t1 = nn.ConvTranspose1d(16, 8, 4, stride=2, padding=1)
        self.t3 = nn.ConvTranspose3d(4, 4, 2, stride=2)
        self.c1 = nn.Conv1d(8, 8, 3, padding=1)
    def forward(self, a, b):   # a (1,16,20), b (1,4,4,8,8)
        y = self.c1(F.relu(self.t1(a)))
        y = F.interpolate(y, scale_factor=2, mode="linear", align_corners=False)
        z = F.interpolate(self.t3(b), scale_factor=2, mode="trilinear", align_corners=False)
        return y, z


class GLUPrelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(8, 32, 1)
        self.p = nn.PReLU(16)
        self.l = nn.Linear(16, 16)
    def forward(self, x):    # (1, 8, 10, 10)
        y = F.glu(self.c(x), dim=1)          # (1,16,10,10)
        y = self.p(y)
        y = F.normalize(y, dim=1)
        z = self.l(y.permute(0, 2, 3, 1))     # channels-last linear
        return z


class LNNoAffine(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(32, 32)
        self.ln = nn.LayerNorm(32, elementwise_affine=False)
    def forward(self, x):
        return self.l(self.ln(x))


class CumsumTopk(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(32, 32)
    def forward(self, x):  # (1, 16, 32)
        y = self.l(x)
        return torch.cumsum(y, dim=1), torch.topk(y, 4, dim=-1).values


class VarStd(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(32, 32)
        self.o = nn.Linear(32, 8)
    def forward(self, x):  # (2, 16, 32)
        y = self.l(x)
        m = y.mean(dim=(1, 2), keepdim=True)
        v = y.var(dim=1, keepdim=True)
        z = (y - m) / torch.sqrt(v + 1e-5)
        return self.o(z), y.sum(), y.amax(dim=-1)


class HeadWeight(nn.Module):
    """per-head weights as one 3-D parameter (matmul with a stacked weight), and x @ v with a 1-D parameter"""
    def __init__(self, h=4, d=32, e=16):
        super().__init__()
        self.w = nn.Parameter(torch.randn(h, d, e))
        self.v = nn.Parameter(torch.randn(e))
        self.h = h
    def forward(self, x):  # (2, 10, 128)
        B, T, C = x.shape
        xh = x.view(B, T, self.h, C // self.h).transpose(1, 2)   # (B, h, T, d)
        y = torch.matmul(xh, self.w)                               # (B, h, T, e)
        return torch.matmul(y, self.v)                             # (B, h, T)


class TokenMix(nn.Module):
    """weight @ activation over a batch: MLP-Mixer token mixing written with matmul."""
    def __init__(self, s=16, d=32):
        super().__init__()
        self.w = nn.Parameter(torch.randn(s, s))
        self.l = nn.Linear(d, d)
    def forward(self, x):   # (2, 16, 32)
        return self.l(torch.matmul(self.w, x))


class EncPadMask(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    def forward(self, x, pad):
        return self.enc(x, src_key_padding_mask=pad)


class MHABiasKV(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(64, 4, add_bias_kv=True, add_zero_attn=True)
    def forward(self, x):
        return self.mha(x, x, x, need_weights=False)[0]


class CompareScatter(nn.Module):
    """Comparisons (>=, <=), torch.isinf / nan_to_num, atan, tan, softsign; a cache written in
    place (slice assignment: ScatterND into an activation) and a scatter by an argsort."""
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(32, 32)
    def forward(self, x, cache):       # x (1, 16, 32), cache (1, 32, 32)
        h = self.lin(x)
        keep = (h >= 0.1) | (h <= -0.1)
        h = torch.nan_to_num(torch.where(torch.isinf(h), torch.zeros_like(h), h)) * keep
        s = torch.atan(h) + F.softsign(h) + torch.tan(h)
        c = cache.clone()
        c[:, 8:24] = s
        y = torch.zeros_like(s).scatter(2, torch.argsort(s, -1), s)
        return (c @ c.transpose(1, 2)).softmax(-1) @ c, y
