"""Hand-written architectures for bench/heldout/heldout_exports.py: the ones tests/models/export_torch.py
does not have, each written the way its reference implementation writes it (HF BERT and T5, DETR,
ConvNeXt-V2, timm's MobileViT, QuartzNet, milesial's U-Net, EDSR, ESPCN, SENet), at small
widths so that an export takes seconds."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision


# ---------------------------------------------------------------- BERT (HF BertModel layout)

class BertLayer(nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.h, self.hd = heads, d // heads
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.attn_out = nn.Linear(d, d)
        self.attn_norm = nn.LayerNorm(d, eps=1e-12)
        self.intermediate = nn.Linear(d, ff)
        self.output = nn.Linear(ff, d)
        self.out_norm = nn.LayerNorm(d, eps=1e-12)
        self.dropout = nn.Dropout(0.1)

    def heads(self, x):
        b, t, _ = x.size()
        return x.view(b, t, self.h, self.hd).permute(0, 2, 1, 3)

    def forward(self, x, ext_mask):
        q, k, v = self.heads(self.query(x)), self.heads(self.key(x)), self.heads(self.value(x))
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.hd) + ext_mask
        p = self.dropout(F.softmax(s, dim=-1))
        c = torch.matmul(p, v).permute(0, 2, 1, 3).contiguous()
        c = c.view(c.size()[:-2] + (self.h * self.hd,))
        x = self.attn_norm(self.dropout(self.attn_out(c)) + x)
        return self.out_norm(self.dropout(self.output(F.gelu(self.intermediate(x)))) + x)


class Bert(nn.Module):
    """BERT-mini widths (d 256, 4 heads, ff 1024, 2 layers): word + position + token-type
    embeddings and LayerNorm; the int attention mask becomes (1 - mask) * finfo.min added to the
    scores; pooler (Linear + Tanh on token 0) and a 2-way classifier. Without token_type_ids
    the token types come from a zero buffer, as HF does."""

    def __init__(self, vocab=8192, d=256, heads=4, ff=1024, layers=2, max_pos=512):
        super().__init__()
        self.word = nn.Embedding(vocab, d, padding_idx=0)
        self.position = nn.Embedding(max_pos, d)
        self.token_type = nn.Embedding(2, d)
        self.norm = nn.LayerNorm(d, eps=1e-12)
        self.register_buffer("position_ids", torch.arange(max_pos).expand((1, -1)))
        self.register_buffer("token_type_ids", torch.zeros((1, max_pos), dtype=torch.long))
        self.layers = nn.ModuleList(BertLayer(d, heads, ff) for _ in range(layers))
        self.pooler = nn.Linear(d, d)
        self.classifier = nn.Linear(d, 2)

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        b, t = input_ids.size()
        if token_type_ids is None:
            token_type_ids = self.token_type_ids[:, :t].expand(b, t)
        x = self.word(input_ids) + self.token_type(token_type_ids) + self.position(self.position_ids[:, :t])
        x = self.norm(x)
        ext = attention_mask[:, None, None, :].to(x.dtype)
        ext = (1.0 - ext) * torch.finfo(x.dtype).min
        for layer in self.layers:
            x = layer(x, ext)
        return self.classifier(torch.tanh(self.pooler(x[:, 0])))


# ---------------------------------------------------------------- T5 encoder (HF T5Stack layout)

class T5LayerNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        variance = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def relative_position_bucket(relative_position, num_buckets=32, max_distance=128):
    """HF T5's bidirectional bucketing."""
    num_buckets //= 2
    buckets = (relative_position > 0).to(torch.long) * num_buckets
    relative_position = torch.abs(relative_position)
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    large = max_exact + (torch.log(relative_position.float() / max_exact)
                         / math.log(max_distance / max_exact) * (num_buckets - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return buckets + torch.where(is_small, relative_position, large)


class T5Attention(nn.Module):
    def __init__(self, d, heads, bias):
        super().__init__()
        self.h, self.hd = heads, d // heads
        self.q, self.k, self.v = (nn.Linear(d, d, bias=False) for _ in range(3))
        self.o = nn.Linear(d, d, bias=False)
        self.relative_attention_bias = nn.Embedding(32, heads) if bias else None

    def compute_bias(self, q_len, k_len):
        ctx = torch.arange(q_len, dtype=torch.long)[:, None]
        mem = torch.arange(k_len, dtype=torch.long)[None, :]
        bucket = relative_position_bucket(mem - ctx)
        return self.relative_attention_bias(bucket).permute([2, 0, 1]).unsqueeze(0)

    def forward(self, x, position_bias=None):
        b, t, _ = x.shape

        def shape(y):
            return y.view(b, -1, self.h, self.hd).transpose(1, 2)
        q, k, v = shape(self.q(x)), shape(self.k(x)), shape(self.v(x))
        scores = torch.matmul(q, k.transpose(3, 2))   # T5 does not scale the scores
        if position_bias is None:
            position_bias = self.compute_bias(t, t)
        w = F.softmax((scores + position_bias).float(), dim=-1).type_as(scores)
        o = torch.matmul(w, v).transpose(1, 2).contiguous().view(b, -1, self.h * self.hd)
        return self.o(o), position_bias


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class T5Block(nn.Module):
    def __init__(self, d, heads, ff, bias):
        super().__init__()
        self.ln1 = T5LayerNorm(d)
        self.attn = T5Attention(d, heads, bias)
        self.ln2 = T5LayerNorm(d)
        self.wi_0, self.wi_1 = nn.Linear(d, ff, bias=False), nn.Linear(d, ff, bias=False)
        self.wo = nn.Linear(ff, d, bias=False)

    def forward(self, x, position_bias):
        a, position_bias = self.attn(self.ln1(x), position_bias)
        x = x + a
        h = self.ln2(x)
        return x + self.wo(gelu_new(self.wi_0(h)) * self.wi_1(h)), position_bias


class T5Encoder(nn.Module):
    """T5-v1.1-small-like encoder (d 512, 8 heads, gated-GELU ff 1024, 2 blocks); the first
    block computes the relative position bias, the next reuse it."""

    def __init__(self, vocab=8192, d=512, heads=8, ff=1024, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(T5Block(d, heads, ff, i == 0) for i in range(layers))
        self.final_norm = T5LayerNorm(d)

    def forward(self, input_ids):
        x, bias = self.embed(input_ids), None
        for block in self.blocks:
            x, bias = block(x, bias)
        return self.final_norm(x)


# ---------------------------------------------------------------- DETR

class Detr(nn.Module):
    """DETR-like: resnet18 trunk to stride 32, 1x1 conv to 256, position embedding (DETR's
    PositionEmbeddingSine from the cumsum of a mask of ones, or learned), nn.Transformer with
    2 encoder and 2 decoder layers (batch_first), 100 learned queries as the decoder input,
    class Linear and a 3-layer box MLP with sigmoid."""

    def __init__(self, d=256, queries=100, classes=92, sine=True, size=256):
        super().__init__()
        r = torchvision.models.resnet18(weights=None)
        self.backbone = nn.Sequential(r.conv1, r.bn1, r.relu, r.maxpool, r.layer1, r.layer2,
                                      r.layer3, r.layer4)
        self.proj = nn.Conv2d(512, d, 1)
        self.sine = sine
        self.d = d
        if not sine:
            self.pos = nn.Parameter(torch.randn(1, (size // 32) ** 2, d) * 0.02)
        self.transformer = nn.Transformer(d, 8, 2, 2, 1024, dropout=0.1, batch_first=True)
        self.query = nn.Parameter(torch.randn(queries, d))
        self.class_embed = nn.Linear(d, classes)
        self.bbox = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d), nn.ReLU(),
                                  nn.Linear(d, 4))

    def sine_embedding(self, x):
        b, _, h, w = x.shape
        mask = torch.ones((b, h, w), dtype=torch.float32)
        y = mask.cumsum(1)
        xx = mask.cumsum(2)
        eps, scale, npf = 1e-6, 2 * math.pi, self.d // 2
        y = y / (y[:, -1:, :] + eps) * scale
        xx = xx / (xx[:, :, -1:] + eps) * scale
        dim_t = torch.arange(npf, dtype=torch.float32)
        dim_t = 10000 ** (2 * torch.div(dim_t, 2, rounding_mode="floor") / npf)
        px, py = xx[:, :, :, None] / dim_t, y[:, :, :, None] / dim_t
        px = torch.stack((px[:, :, :, 0::2].sin(), px[:, :, :, 1::2].cos()), dim=4).flatten(3)
        py = torch.stack((py[:, :, :, 0::2].sin(), py[:, :, :, 1::2].cos()), dim=4).flatten(3)
        return torch.cat((py, px), dim=3).flatten(1, 2)      # (b, h*w, d)

    def forward(self, x):
        f = self.proj(self.backbone(x))
        src = f.flatten(2).transpose(1, 2)
        src = src + (self.sine_embedding(f) if self.sine else self.pos)
        tgt = self.query.unsqueeze(0).repeat(x.shape[0], 1, 1)
        hs = self.transformer(src, tgt)
        return self.class_embed(hs), self.bbox(hs).sigmoid()


# ---------------------------------------------------------------- ConvNeXt-V2

class LayerNorm2d(nn.Module):
    """ConvNeXt's channels_first LayerNorm, written out as the reference does."""

    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight, self.bias = nn.Parameter(torch.ones(d)), nn.Parameter(torch.zeros(d))
        self.eps = eps

    def forward(self, x):
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.eps)
        return self.weight[:, None, None] * x + self.bias[:, None, None]


class GRN(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.gamma = nn.Parameter(torch.zeros(1, 1, 1, d))
        self.beta = nn.Parameter(torch.zeros(1, 1, 1, d))

    def forward(self, x):
        gx = torch.norm(x, p=2, dim=(1, 2), keepdim=True)
        nx = gx / (gx.mean(dim=-1, keepdim=True) + 1e-6)
        return self.gamma * (x * nx) + self.beta + x


class ConvNeXtV2Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.dwconv = nn.Conv2d(d, d, 7, padding=3, groups=d)
        self.norm = nn.LayerNorm(d, eps=1e-6)
        self.pwconv1 = nn.Linear(d, 4 * d)
        self.grn = GRN(4 * d)
        self.pwconv2 = nn.Linear(4 * d, d)

    def forward(self, x):
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.pwconv2(self.grn(F.gelu(self.pwconv1(self.norm(y)))))
        return x + y.permute(0, 3, 1, 2)


class ConvNeXtV2(nn.Module):
    """ConvNeXt-V2 atto (dims 40-80-160-320, depths 2-2-6-2)."""

    def __init__(self, dims=(40, 80, 160, 320), depths=(2, 2, 6, 2), classes=1000):
        super().__init__()
        self.downsample = nn.ModuleList([nn.Sequential(nn.Conv2d(3, dims[0], 4, 4), LayerNorm2d(dims[0]))])
        for i in range(3):
            self.downsample.append(nn.Sequential(LayerNorm2d(dims[i]), nn.Conv2d(dims[i], dims[i + 1], 2, 2)))
        self.stages = nn.ModuleList(nn.Sequential(*[ConvNeXtV2Block(dims[i]) for _ in range(depths[i])])
                                    for i in range(4))
        self.norm = nn.LayerNorm(dims[-1], eps=1e-6)
        self.head = nn.Linear(dims[-1], classes)

    def forward(self, x):
        for down, stage in zip(self.downsample, self.stages):
            x = stage(down(x))
        return self.head(self.norm(x.mean([-2, -1])))


# ---------------------------------------------------------------- MobileViT (timm layout)

def conv_bn(cin, cout, k=3, s=1, groups=1, act=True):
    layers = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if act:
        layers.append(nn.SiLU())
    return nn.Sequential(*layers)


class MV2(nn.Module):
    def __init__(self, cin, cout, s, expand=4):
        super().__init__()
        h = cin * expand
        self.block = nn.Sequential(conv_bn(cin, h, 1), conv_bn(h, h, 3, s, groups=h),
                                   conv_bn(h, cout, 1, act=False))
        self.res = s == 1 and cin == cout

    def forward(self, x):
        return x + self.block(x) if self.res else self.block(x)


class Attention(nn.Module):
    """timm's Attention: one qkv Linear, reshape + permute, unbind."""

    def __init__(self, d, heads):
        super().__init__()
        self.h, self.hd = heads, d // heads
        self.scale = self.hd ** -0.5
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.h, self.hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        a = ((q * self.scale) @ k.transpose(-2, -1)).softmax(dim=-1)
        return self.proj((a @ v).transpose(1, 2).reshape(b, n, c))


class TBlock(nn.Module):
    def __init__(self, d, heads, mlp):
        super().__init__()
        self.norm1, self.attn = nn.LayerNorm(d), Attention(d, heads)
        self.norm2 = nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, mlp), nn.Linear(mlp, d)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.fc2(F.silu(self.fc1(self.norm2(x))))


class MobileViTBlock(nn.Module):
    def __init__(self, c, d, depth, heads=4, patch=2):
        super().__init__()
        self.conv_kxk = conv_bn(c, c, 3)
        self.conv_1x1 = nn.Conv2d(c, d, 1, bias=False)
        self.transformer = nn.Sequential(*[TBlock(d, heads, 2 * d) for _ in range(depth)])
        self.norm = nn.LayerNorm(d)
        self.conv_proj = conv_bn(d, c, 1)
        self.conv_fusion = conv_bn(2 * c, c, 3)
        self.ph = self.pw = patch

    def forward(self, x):
        shortcut = x
        x = self.conv_1x1(self.conv_kxk(x))
        b, c, h, w = x.shape
        nh, nw = h // self.ph, w // self.pw
        n, area = nh * nw, self.ph * self.pw
        # timm's unfold: [B, C, H, W] -> [B * patch_area, num_patches, C]
        x = x.reshape(b * c * nh, self.ph, nw, self.pw).transpose(1, 2)
        x = x.reshape(b, c, n, area).transpose(1, 3).reshape(b * area, n, -1)
        x = self.norm(self.transformer(x))
        # fold back
        x = x.contiguous().view(b, area, n, -1)
        x = x.transpose(1, 3).reshape(b * c * nh, nw, self.ph, self.pw)
        x = x.transpose(1, 2).reshape(b, c, nh * self.ph, nw * self.pw)
        x = self.conv_proj(x)
        return self.conv_fusion(torch.cat((shortcut, x), dim=1))


class MobileViT(nn.Module):
    """MobileViT-XXS layout at 256x256: stem, MV2 stages, MobileViT blocks at 32x32 (d 64,
    2 layers), 16x16 (d 80, 4) and 8x8 (d 96, 3), 1x1 conv, pool, classifier."""

    def __init__(self, classes=1000):
        super().__init__()
        self.stem = conv_bn(3, 16, 3, 2)
        self.s1 = MV2(16, 16, 1, 2)
        self.s2 = nn.Sequential(MV2(16, 24, 2, 2), MV2(24, 24, 1, 2), MV2(24, 24, 1, 2))
        self.s3 = nn.Sequential(MV2(24, 48, 2, 2), MobileViTBlock(48, 64, 2))
        self.s4 = nn.Sequential(MV2(48, 64, 2, 2), MobileViTBlock(64, 80, 4))
        self.s5 = nn.Sequential(MV2(64, 80, 2, 2), MobileViTBlock(80, 96, 3))
        self.final = conv_bn(80, 320, 1)
        self.head = nn.Linear(320, classes)

    def forward(self, x):
        x = self.final(self.s5(self.s4(self.s3(self.s2(self.s1(self.stem(x)))))))
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


# ---------------------------------------------------------------- recurrent (expected unsupported)

class LSTMNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(80, 256, 2, batch_first=True)
        self.head = nn.Linear(256, 29)

    def forward(self, x):
        return self.head(self.rnn(x)[0])


class GRUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(80, 128, 1, batch_first=True, bidirectional=True)
        self.head = nn.Linear(256, 29)

    def forward(self, x):
        return self.head(self.rnn(x)[0])


# ---------------------------------------------------------------- QuartzNet-like 1-D audio net

class SepConv1d(nn.Module):
    def __init__(self, cin, cout, k, stride=1):
        super().__init__()
        self.dw = nn.Conv1d(cin, cin, k, stride, k // 2, groups=cin, bias=False)
        self.pw = nn.Conv1d(cin, cout, 1, bias=False)
        self.bn = nn.BatchNorm1d(cout)

    def forward(self, x):
        return self.bn(self.pw(self.dw(x)))


class QBlock(nn.Module):
    def __init__(self, cin, cout, k, repeat=2):
        super().__init__()
        mods = []
        for i in range(repeat):
            mods.append(SepConv1d(cin if i == 0 else cout, cout, k))
            if i < repeat - 1:
                mods.append(nn.ReLU())
        self.body = nn.Sequential(*mods)
        self.res = nn.Sequential(nn.Conv1d(cin, cout, 1, bias=False), nn.BatchNorm1d(cout))

    def forward(self, x):
        return F.relu(self.body(x) + self.res(x))


class AudioNet(nn.Module):
    """QuartzNet 5x2-like at 128 channels over 64 mel bins x 256 frames: a strided separable
    stem, separable blocks with residual 1x1 conv, a dilated separable conv, 1x1 convs to 29
    characters, log_softmax over them."""

    def __init__(self, mels=64, c=128, classes=29):
        super().__init__()
        self.stem = nn.Sequential(SepConv1d(mels, c, 33, 2), nn.ReLU())
        self.blocks = nn.Sequential(QBlock(c, c, 33), QBlock(c, c, 39), QBlock(c, 2 * c, 51),
                                    QBlock(2 * c, 2 * c, 63), QBlock(2 * c, 2 * c, 75))
        self.dilated = nn.Sequential(nn.Conv1d(2 * c, 2 * c, 87, padding=86, dilation=2, groups=2 * c,
                                               bias=False), nn.Conv1d(2 * c, 4 * c, 1), nn.ReLU())
        self.out = nn.Conv1d(4 * c, classes, 1)

    def forward(self, x):
        return F.log_softmax(self.out(self.dilated(self.blocks(self.stem(x)))), dim=1)


# ---------------------------------------------------------------- U-Net (milesial layout)

class DoubleConv(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                                  nn.ReLU(inplace=True), nn.Conv2d(cout, cout, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    def forward(self, x):
        return self.body(x)


class Up(nn.Module):
    def __init__(self, cin, cout, k4=False):
        super().__init__()
        self.up = (nn.ConvTranspose2d(cin, cin // 2, 4, 2, 1) if k4 else
                   nn.ConvTranspose2d(cin, cin // 2, 2, 2))
        self.conv = DoubleConv(cin, cout)

    def forward(self, x1, x2):
        x1 = self.up(x1)
        dy, dx = x2.size()[2] - x1.size()[2], x2.size()[3] - x1.size()[3]
        x1 = F.pad(x1, [dx // 2, dx - dx // 2, dy // 2, dy - dy // 2])
        return self.conv(torch.cat([x2, x1], dim=1))


class UNetBN(nn.Module):
    """milesial/Pytorch-UNet with bilinear=False at half width (32-64-128-256-512): BN + ReLU,
    MaxPool down, ConvTranspose up (2x2 s2; the last one 4x4 s2 p1), F.pad to the skip's size,
    concat skip first."""

    def __init__(self, cin=3, classes=2, base=32):
        super().__init__()
        w = [base * 2 ** i for i in range(5)]
        self.inc = DoubleConv(cin, w[0])
        self.downs = nn.ModuleList(DoubleConv(w[i], w[i + 1]) for i in range(4))
        self.ups = nn.ModuleList(Up(w[4 - i], w[3 - i], k4=(i == 3)) for i in range(4))
        self.outc = nn.Conv2d(w[0], classes, 1)

    def forward(self, x):
        xs = [self.inc(x)]
        for down in self.downs:
            xs.append(down(F.max_pool2d(xs[-1], 2)))
        x = xs.pop()
        for up in self.ups:
            x = up(x, xs.pop())
        return self.outc(x)


# ---------------------------------------------------------------- super-resolution (PixelShuffle)

class ResBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(c, c, 3, padding=1), nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return x + self.c2(F.relu(self.c1(x))) * 0.1


class EDSR(nn.Module):
    """EDSR-baseline-lite x4: mean shift (a 1x1 conv as in the reference), head conv, 8 residual
    blocks, conv + PixelShuffle(2) twice, tail conv, mean shift back."""

    def __init__(self, c=64, blocks=8):
        super().__init__()
        self.sub_mean = nn.Conv2d(3, 3, 1)
        self.head = nn.Conv2d(3, c, 3, padding=1)
        self.body = nn.Sequential(*[ResBlock(c) for _ in range(blocks)], nn.Conv2d(c, c, 3, padding=1))
        self.up = nn.Sequential(nn.Conv2d(c, 4 * c, 3, padding=1), nn.PixelShuffle(2),
                                nn.Conv2d(c, 4 * c, 3, padding=1), nn.PixelShuffle(2))
        self.tail = nn.Conv2d(c, 3, 3, padding=1)
        self.add_mean = nn.Conv2d(3, 3, 1)

    def forward(self, x):
        x = self.head(self.sub_mean(x))
        x = x + self.body(x)
        return self.add_mean(self.tail(self.up(x)))


class ESPCN(nn.Module):
    def __init__(self, r=3):
        super().__init__()
        self.c1 = nn.Conv2d(1, 64, 5, padding=2)
        self.c2 = nn.Conv2d(64, 32, 3, padding=1)
        self.c3 = nn.Conv2d(32, r * r, 3, padding=1)
        self.ps = nn.PixelShuffle(r)

    def forward(self, x):
        return self.ps(self.c3(torch.tanh(self.c2(torch.tanh(self.c1(x))))))


# ---------------------------------------------------------------- SE-ResNeXt

class SEBottleneck(torchvision.models.resnet.Bottleneck):
    """torchvision's Bottleneck with SENet's squeeze-excitation (Linear layers, view to
    (b, c, 1, 1)) before the residual add."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        c = self.conv3.out_channels
        self.fc1, self.fc2 = nn.Linear(c, c // 16), nn.Linear(c // 16, c)

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        b, c, _, _ = out.size()
        y = F.adaptive_avg_pool2d(out, 1).view(b, c)
        y = torch.sigmoid(self.fc2(F.relu(self.fc1(y)))).view(b, c, 1, 1)
        return self.relu(out * y + identity)


def se_resnext50():
    return torchvision.models.resnet.ResNet(SEBottleneck, [3, 4, 6, 3], groups=32, width_per_group=4)


# ---------------------------------------------------------------- wrappers of torchvision outputs

class DetOut(nn.Module):
    """torchvision detectors take a list of CHW images and return a list of dicts; the export
    takes one NCHW tensor and returns the first image's boxes, scores and labels."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        out = self.model([x[0]])[0]
        return out["boxes"], out["scores"], out["labels"]


class FlowOut(nn.Module):
    """RAFT returns the flow of every update; the export takes the last one."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, image1, image2):
        return self.model(image1, image2, num_flow_updates=4)[-1]


# ---------------------------------------------------------------- more real-world patterns

class SDResBlock(nn.Module):
    def __init__(self, c, temb):
        super().__init__()
        self.norm1, self.conv1 = nn.GroupNorm(32, c), nn.Conv2d(c, c, 3, padding=1)
        self.temb = nn.Linear(temb, c)
        self.norm2, self.conv2 = nn.GroupNorm(32, c), nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x, t):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.temb(F.silu(t))[:, :, None, None]
        return x + self.conv2(F.silu(self.norm2(h)))


class SDCrossAttnBlock(nn.Module):
    def __init__(self, c, ctx, heads=8):
        super().__init__()
        self.h = heads
        self.norm = nn.GroupNorm(32, c)
        self.proj_in = nn.Conv2d(c, c, 1)
        self.ln1, self.ln2, self.ln3 = nn.LayerNorm(c), nn.LayerNorm(c), nn.LayerNorm(c)
        self.q1, self.k1, self.v1, self.o1 = (nn.Linear(c, c, bias=(i == 3)) for i in range(4))
        self.q2 = nn.Linear(c, c, bias=False)
        self.k2, self.v2 = nn.Linear(ctx, c, bias=False), nn.Linear(ctx, c, bias=False)
        self.o2 = nn.Linear(c, c)
        self.ff1, self.ff2 = nn.Linear(c, 8 * c), nn.Linear(4 * c, c)
        self.proj_out = nn.Conv2d(c, c, 1)

    def attend(self, q, k, v):
        b, n, c = q.shape
        q, k, v = (y.reshape(b, -1, self.h, c // self.h).transpose(1, 2) for y in (q, k, v))
        a = (q @ k.transpose(-1, -2) * (c // self.h) ** -0.5).softmax(-1)
        return (a @ v).transpose(1, 2).reshape(b, n, c)

    def forward(self, x, context):
        b, c, h, w = x.shape
        y = self.proj_in(self.norm(x)).permute(0, 2, 3, 1).reshape(b, h * w, c)
        z = self.ln1(y)
        y = y + self.o1(self.attend(self.q1(z), self.k1(z), self.v1(z)))
        z = self.ln2(y)
        y = y + self.o2(self.attend(self.q2(z), self.k2(context), self.v2(context)))
        a, gate = self.ff1(self.ln3(y)).chunk(2, dim=-1)          # GEGLU
        y = y + self.ff2(a * F.gelu(gate))
        return x + self.proj_out(y.reshape(b, h, w, c).permute(0, 3, 1, 2))


class SDUNetMini(nn.Module):
    """Stable-Diffusion-UNet-like slice: three inputs (latent 1x4x32x32, timestep [1] float, text
    context 1x77x768); sinusoidal timestep embedding computed in the graph (Exp, Sin, Cos of the
    timestep input) and an MLP; ResBlocks with GroupNorm(32) + SiLU + the time embedding added
    per channel; a spatial transformer (self-attention, cross-attention to the context, GEGLU);
    a stride-2 conv down and a nearest x2 upsample with a skip concat."""

    def __init__(self, c=320, ctx=768):
        super().__init__()
        self.c = c
        self.time1, self.time2 = nn.Linear(c, 4 * c), nn.Linear(4 * c, 4 * c)
        self.conv_in = nn.Conv2d(4, c, 3, padding=1)
        self.res1 = SDResBlock(c, 4 * c)
        self.attn1 = SDCrossAttnBlock(c, ctx)
        self.down = nn.Conv2d(c, c, 3, 2, 1)
        self.res2 = SDResBlock(c, 4 * c)
        self.attn2 = SDCrossAttnBlock(c, ctx)
        self.up = nn.Conv2d(c, c, 3, padding=1)
        self.merge = nn.Conv2d(2 * c, c, 1)
        self.res3 = SDResBlock(c, 4 * c)
        self.norm_out, self.conv_out = nn.GroupNorm(32, c), nn.Conv2d(c, 4, 3, padding=1)

    def forward(self, sample, timestep, context):
        half = self.c // 2
        freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32) / half)
        args = timestep[:, None].float() * freqs[None]
        t = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
        t = self.time2(F.silu(self.time1(t)))
        x = self.attn1(self.res1(self.conv_in(sample), t), context)
        skip = x
        x = self.attn2(self.res2(self.down(x), t), context)
        x = self.up(F.interpolate(x, scale_factor=2.0, mode="nearest"))
        x = self.res3(self.merge(torch.cat([x, skip], dim=1)), t)
        return self.conv_out(F.silu(self.norm_out(x)))


class ClipText(nn.Module):
    """CLIP text encoder (d 512, 8 heads, 2 layers, 77 tokens): token + learned position
    embeddings, causal mask buffer, pre-LN blocks with QuickGELU (x * sigmoid(1.702 x)), final
    LayerNorm, the EOS token picked by x[arange(b), ids.argmax(-1)] (ArgMax + a gather with
    computed indices), projection."""

    def __init__(self, vocab=49408, d=512, heads=8, layers=2, ctx=77):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(ctx, d) * 0.01)
        self.blocks = nn.ModuleList(nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, activation=lambda x: x * torch.sigmoid(1.702 * x),
                                                               batch_first=True, norm_first=True) for _ in range(layers))
        self.register_buffer("mask", torch.full((ctx, ctx), float("-inf")).triu(1))
        self.ln = nn.LayerNorm(d)
        self.proj = nn.Parameter(torch.randn(d, d) * 0.02)

    def forward(self, ids):
        x = self.tok(ids) + self.pos
        for blk in self.blocks:
            x = blk(x, src_mask=self.mask)
        x = self.ln(x)
        return x[torch.arange(x.shape[0]), ids.argmax(dim=-1)] @ self.proj


class Perceiver(nn.Module):
    """Perceiver-style encoder: a learned latent array (64 x 256, a parameter) cross-attends to
    the input tokens (196 x 256, from a patch conv), then 2 self-attention layers on the latents
    (nn.MultiheadAttention), mean and a classifier."""

    def __init__(self, d=256, latents=64, classes=1000):
        super().__init__()
        self.stem = nn.Conv2d(3, d, 16, 16)
        self.latents = nn.Parameter(torch.randn(latents, d) * 0.02)
        self.ln_q, self.ln_kv = nn.LayerNorm(d), nn.LayerNorm(d)
        self.cross = nn.MultiheadAttention(d, 1, batch_first=True)
        self.layers = nn.ModuleList(nn.TransformerEncoderLayer(d, 8, 4 * d, dropout=0.0, batch_first=True) for _ in range(2))
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        kv = self.ln_kv(self.stem(x).flatten(2).transpose(1, 2))
        q = self.ln_q(self.latents).unsqueeze(0).expand(x.shape[0], -1, -1)
        z = q + self.cross(q, kv, kv, need_weights=False)[0]
        for layer in self.layers:
            z = layer(z)
        return self.head(z.mean(1))


class GPTKVCache(nn.Module):
    """One decoding step of a GPT-2-like decoder with its KV cache as graph inputs (HF's
    use_cache export): ids 1x1, past keys/values 1x6x127x64 per layer (2 layers); the new key
    and value are concatenated to the past along the sequence; outputs the logits and the
    presents."""

    def __init__(self, vocab=4096, d=384, heads=6, layers=2):
        super().__init__()
        self.h, self.hd = heads, d // heads
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(1024, d)
        self.ln1 = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
        self.qkv = nn.ModuleList(nn.Linear(d, 3 * d) for _ in range(layers))
        self.proj = nn.ModuleList(nn.Linear(d, d) for _ in range(layers))
        self.ln2 = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
        self.fc = nn.ModuleList(nn.Linear(d, 4 * d) for _ in range(layers))
        self.fc2 = nn.ModuleList(nn.Linear(4 * d, d) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids, pk0, pv0, pk1, pv1):
        past = [(pk0, pv0), (pk1, pv1)]
        b, t = ids.shape
        pos = torch.arange(pk0.shape[2], pk0.shape[2] + t).unsqueeze(0)
        x = self.wte(ids) + self.wpe(pos)
        presents = []
        for i, (pk, pv) in enumerate(past):
            q, k, v = self.qkv[i](self.ln1[i](x)).split(x.shape[-1], dim=2)
            q, k, v = (y.view(b, t, self.h, self.hd).transpose(1, 2) for y in (q, k, v))
            k, v = torch.cat([pk, k], dim=2), torch.cat([pv, v], dim=2)
            presents += [k, v]
            a = F.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.hd), dim=-1)
            x = x + self.proj[i]((a @ v).transpose(1, 2).reshape(b, t, -1))
            x = x + self.fc2[i](F.gelu(self.fc[i](self.ln2[i](x))))
        return (self.head(self.ln_f(x)), *presents)


class Focus(nn.Module):
    """YOLOv5's Focus: space-to-depth by four strided slices concatenated on the channels."""

    def __init__(self, cin, cout):
        super().__init__()
        self.conv = conv_bn(4 * cin, cout, 3)

    def forward(self, x):
        return self.conv(torch.cat([x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2]], 1))


class YoloV5Mini(nn.Module):
    """YOLOv5s-v5.0-like front: Focus, stride-2 convs, C3-like blocks, SPP (parallel MaxPool
    5/9/13 concatenated), nearest upsample + concat, a 1x1 detection conv per level reshaped to
    (b, 3, 85, h, w) and permuted to (b, 3, h, w, 85) as YOLOv5's Detect does."""

    def __init__(self):
        super().__init__()
        self.focus = Focus(3, 32)
        self.c1, self.b1 = conv_bn(32, 64, 3, 2), MV2(64, 64, 1, 1)
        self.c2, self.b2 = conv_bn(64, 128, 3, 2), MV2(128, 128, 1, 1)
        self.c3 = conv_bn(128, 256, 3, 2)
        self.spp_cv1, self.spp_cv2 = conv_bn(256, 128, 1), conv_bn(512, 256, 1)
        self.pools = nn.ModuleList(nn.MaxPool2d(k, 1, k // 2) for k in (5, 9, 13))
        self.lat = conv_bn(256, 128, 1)
        self.n1 = conv_bn(256, 128, 3)
        self.det = nn.ModuleList([nn.Conv2d(128, 255, 1), nn.Conv2d(256, 255, 1)])

    def forward(self, x):
        p3 = self.b2(self.c2(self.b1(self.c1(self.focus(x)))))
        y = self.spp_cv1(self.c3(p3))
        p4 = self.spp_cv2(torch.cat([y] + [p(y) for p in self.pools], 1))
        n3 = self.n1(torch.cat([F.interpolate(self.lat(p4), scale_factor=2.0, mode="nearest"), p3], 1))
        outs = []
        for conv, f in zip(self.det, (n3, p4)):
            o = conv(f)
            b, _, h, w = o.shape
            outs.append(o.view(b, 3, 85, h, w).permute(0, 1, 3, 4, 2).contiguous())
        return tuple(outs)


class AvgDownBlock(nn.Module):
    """ResNet-D bottleneck (timm's avg_down): the shortcut is AvgPool2d(2, ceil_mode=True,
    count_include_pad=False) then a 1x1 conv."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        mid = cout // 4
        self.body = nn.Sequential(conv_bn(cin, mid, 1), conv_bn(mid, mid, 3, stride), conv_bn(mid, cout, 1, act=False))
        self.short = nn.Sequential(nn.AvgPool2d(2, stride, ceil_mode=True, count_include_pad=False) if stride > 1 else nn.Identity(),
                                   conv_bn(cin, cout, 1, act=False))

    def forward(self, x):
        return F.relu(self.body(x) + self.short(x))


class ResNetD(nn.Module):
    """ResNet-D-like: deep stem (three 3x3 convs), max-pool, avg-down bottlenecks at odd sizes
    (input 225 x 225, so the ceil-mode pools have partial windows)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(conv_bn(3, 32, 3, 2), conv_bn(32, 32, 3), conv_bn(32, 64, 3))
        self.blocks = nn.Sequential(AvgDownBlock(64, 256, 1), AvgDownBlock(256, 512, 2), AvgDownBlock(512, 1024, 2),
                                    AvgDownBlock(1024, 2048, 2))
        self.fc = nn.Linear(2048, 1000)

    def forward(self, x):
        x = self.blocks(F.max_pool2d(self.stem(x), 3, 2, 1))
        return self.fc(x.mean((2, 3)))


def resnet18_qat():
    """resnet18 prepared for quantization-aware training (fbgemm fake-quant observers, per-channel
    weights): torch.onnx exports QuantizeLinear/DequantizeLinear pairs, as TensorRT's QAT flow
    does."""
    import torch.ao.quantization as q
    m = torchvision.models.quantization.resnet18(weights=None, quantize=False)
    m.fuse_model(is_qat=True)
    m.qconfig = q.get_default_qat_qconfig("fbgemm", version=0)   # not the fused op: it has no export
    m.train()
    q.prepare_qat(m, inplace=True)
    with torch.no_grad():   # one calibration pass sets the observers' ranges
        m(torch.randn(2, 3, 224, 224, generator=torch.Generator().manual_seed(3)))
    m.apply(q.disable_observer)
    return m
