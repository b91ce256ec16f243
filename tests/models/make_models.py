#!/usr/bin/python3
"""Generate ONNX test models for the annealer ONNX importer, with hand-checked counts.

Usage:  /usr/bin/python3 tests/models/make_models.py OUT_DIR [--no-check]

Needs only the `onnx` package (tested with Debian 12's python3-onnx 1.12.0) and numpy.

Writes into OUT_DIR:
  mlp.onnx, resnet_bottleneck.onnx, mobilenetv2_block.onnx, transformer_block.onnx,
  transformer_block_opset17.onnx, dynamic_shapes.onnx, external_weights.onnx (+
  external_weights.data), stripped_weights.onnx, resnet50.onnx, mobilenetv2.onnx, vit_b16.onnx
  and expected.json.

Weights.  Except for external_weights.onnx (real random weights in external_weights.data), every
weight/bias initializer is *stripped*: it keeps name, dims and data_type but holds no data.  The
importer only needs shapes, and this keeps resnet50/vit_b16 at a few tens of KB.  onnx.load()
reads such files fine and shape inference works, but onnx.checker rejects them ("should contain
one and only one value field"); expected.json records the checker's verdict on the file and on
a copy whose stripped tensors are zero-filled in memory (which must pass: the graph is valid).
Constants the importer has to *read* (Reshape shapes, Split sizes, Gather indices, Clip bounds,
scalars) always carry real data.

Counting conventions (all counts for batch 1):
  macs            multiply-accumulates of Conv, ConvTranspose, Gemm and MatMul (matrix MACs),
                  including activation x activation batched MatMuls (attention) and depthwise
                  convs.  Bias adds, BN, activations, pooling, softmax, ... are not counted.
                  Conv:   Cout * Hout * Wout * (Cin / group) * kh * kw
                  Gemm:   M * N * K
                  MatMul: prod(batch dims) * M * N * K
  depthwise_macs  the part of `macs` done by depthwise convs (group == Cin == Cout, group > 1)
  dense_macs      macs - depthwise_macs
  params          elements of all learnable tensors: conv/gemm/matmul weights and biases,
                  BN scale/bias/mean/var (no model here keeps BN: they are folded), LayerNorm
                  gamma/beta, class token, position embedding.  In the file these are exactly
                  the float initializers of rank >= 1; rank-0 float initializers (Clip bounds,
                  1/sqrt(d), eps, Gelu constants, the Pow exponent, Dropout ratio) and int64
                  initializers (shapes, indices, split sizes) are constants, not params.
  matmul_params   elements of the weight matrices that are an operand of a MatMul or Gemm (not
                  the biases, not conv weights).
  nodes           count of nodes by op_type (Constant nodes included).
  largest_activation  elements of the largest tensor that is a graph input or a node output
                  (initializers excluded).
  inputs          graph input name -> shape (a string is a symbolic dim_param).

The counts are computed twice: analytically (expected_* functions below, per-layer formulas, with
the hand arithmetic of the small models written out and asserted against literals) and by an
independent walk of the saved file after onnx.shape_inference (walk_counts), which only looks at
op types, attributes and inferred shapes.  The script fails if the two disagree.
"""

import collections
import json
import math
import os
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FLOAT = TensorProto.FLOAT
INT64 = TensorProto.INT64


# --------------------------------------------------------------------------------------------
# Graph builder
# --------------------------------------------------------------------------------------------

class Builder:
    """Small helper around onnx.helper.  `real_weights` fills weights with random data (only
    used for the external-data model); otherwise weights are stripped (dims, no data)."""

    def __init__(self, real_weights=False, seed=0):
        self.nodes = []
        self.inits = []
        self.real = real_weights
        self.rng = np.random.default_rng(seed)
        self.count = collections.Counter()

    def _uniq(self, base):
        self.count[base] += 1
        n = self.count[base]
        return base if n == 1 else f"{base}_{n}"

    def weight(self, name, dims):
        if self.real:
            arr = (self.rng.standard_normal(dims) * 0.05).astype(np.float32)
            t = numpy_helper.from_array(arr, name)
        else:
            t = TensorProto()
            t.name = name
            t.data_type = FLOAT
            t.dims.extend(dims)
        self.inits.append(t)
        return name

    def const(self, name, value, dtype=np.int64):
        """An initializer that always carries data (shapes, indices, scalars)."""
        self.inits.append(numpy_helper.from_array(np.array(value, dtype=dtype), name))
        return name

    def scalar(self, name, value):
        return self.const(name, value, np.float32)

    def node(self, op, inputs, name=None, n_out=1, **attrs):
        name = self._uniq(name or op)
        outs = [name if n_out == 1 else f"{name}_out{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs[0] if n_out == 1 else outs

    def conv(self, x, name, cin, cout, k, stride=1, pad=0, group=1, bias=True):
        w = self.weight(f"{name}.weight", [cout, cin // group, k, k])
        ins = [x, w]
        if bias:
            ins.append(self.weight(f"{name}.bias", [cout]))
        return self.node("Conv", ins, name=name, kernel_shape=[k, k], strides=[stride, stride],
                         pads=[pad] * 4, group=group, dilations=[1, 1])

    def gemm(self, x, name, k, n):
        w = self.weight(f"{name}.weight", [n, k])
        b = self.weight(f"{name}.bias", [n])
        return self.node("Gemm", [x, w, b], name=name, alpha=1.0, beta=1.0, transB=1)

    def linear(self, x, name, k, n):
        """PyTorch nn.Linear on a rank-3 input exports as MatMul(x, W^T) + Add(bias)."""
        w = self.weight(f"{name}.weight", [k, n])
        b = self.weight(f"{name}.bias", [n])
        y = self.node("MatMul", [x, w], name=f"{name}.matmul")
        return self.node("Add", [y, b], name=f"{name}.add_bias")

    def model(self, name, inputs, outputs, opset):
        g = helper.make_graph(self.nodes, name,
                              [helper.make_tensor_value_info(n, FLOAT, s) for n, s in inputs],
                              [helper.make_tensor_value_info(n, FLOAT, s) for n, s in outputs],
                              self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="annealer tests/models/make_models.py")
        m.ir_version = 8  # onnx 1.12 writes 8; keep it fixed for any newer onnx too
        return m


# --------------------------------------------------------------------------------------------
# Shared pieces: layer norm, attention, Gelu
# --------------------------------------------------------------------------------------------

def layer_norm(b, x, name, d, opset17):
    gamma = b.weight(f"{name}.weight", [d])
    beta = b.weight(f"{name}.bias", [d])
    if opset17:
        return b.node("LayerNormalization", [x, gamma, beta], name=name, axis=-1, epsilon=1e-5)
    # as torch.onnx exports F.layer_norm below opset 17
    mean = b.node("ReduceMean", [x], name=f"{name}.mean", axes=[-1], keepdims=1)
    d_ = b.node("Sub", [x, mean], name=f"{name}.sub")
    sq = b.node("Pow", [d_, "ln_two"], name=f"{name}.pow")
    var = b.node("ReduceMean", [sq], name=f"{name}.var", axes=[-1], keepdims=1)
    ve = b.node("Add", [var, "ln_eps"], name=f"{name}.add_eps")
    sd = b.node("Sqrt", [ve], name=f"{name}.sqrt")
    nx = b.node("Div", [d_, sd], name=f"{name}.div")
    sc = b.node("Mul", [nx, gamma], name=f"{name}.mul_gamma")
    return b.node("Add", [sc, beta], name=f"{name}.add_beta")


def gelu(b, x, name):
    """torch.onnx export of exact Gelu below opset 20: x * 0.5 * (1 + erf(x / sqrt(2)))."""
    t = b.node("Div", [x, "gelu_sqrt2"], name=f"{name}.div")
    t = b.node("Erf", [t], name=f"{name}.erf")
    t = b.node("Add", [t, "gelu_one"], name=f"{name}.add")
    t = b.node("Mul", [x, t], name=f"{name}.mul")
    return b.node("Mul", [t, "gelu_half"], name=f"{name}.mul_half")


def add_block_constants(b, seq, d, heads, opset17):
    hd = d // heads
    b.const("split_qkv", [d, d, d])
    b.const("shape_heads", [1, seq, heads, hd])
    b.const("shape_merge", [1, seq, d])
    b.scalar("attn_scale", math.sqrt(hd))
    b.scalar("gelu_sqrt2", math.sqrt(2.0))
    b.scalar("gelu_one", 1.0)
    b.scalar("gelu_half", 0.5)
    if not opset17:
        b.scalar("ln_two", 2.0)
        b.scalar("ln_eps", 1e-5)


def encoder_block(b, x, p, d, heads, mlp, opset17):
    """Pre-LN block: x + Attn(LN(x)); then x + MLP(LN(x)).  Needs add_block_constants()."""
    h = layer_norm(b, x, f"{p}.ln_1", d, opset17)
    qkv = b.linear(h, f"{p}.attn.qkv", d, 3 * d)
    q, k, v = b.node("Split", [qkv, "split_qkv"], name=f"{p}.attn.split", n_out=3, axis=-1)
    q = b.node("Reshape", [q, "shape_heads"], name=f"{p}.attn.q_reshape")
    k = b.node("Reshape", [k, "shape_heads"], name=f"{p}.attn.k_reshape")
    v = b.node("Reshape", [v, "shape_heads"], name=f"{p}.attn.v_reshape")
    q = b.node("Transpose", [q], name=f"{p}.attn.q_transpose", perm=[0, 2, 1, 3])
    k = b.node("Transpose", [k], name=f"{p}.attn.k_transpose", perm=[0, 2, 3, 1])
    v = b.node("Transpose", [v], name=f"{p}.attn.v_transpose", perm=[0, 2, 1, 3])
    s = b.node("MatMul", [q, k], name=f"{p}.attn.qk")
    s = b.node("Div", [s, "attn_scale"], name=f"{p}.attn.scale")
    s = b.node("Softmax", [s], name=f"{p}.attn.softmax", axis=-1)
    o = b.node("MatMul", [s, v], name=f"{p}.attn.av")
    o = b.node("Transpose", [o], name=f"{p}.attn.o_transpose", perm=[0, 2, 1, 3])
    o = b.node("Reshape", [o, "shape_merge"], name=f"{p}.attn.o_reshape")
    o = b.linear(o, f"{p}.attn.proj", d, d)
    x = b.node("Add", [x, o], name=f"{p}.residual_1")
    h = layer_norm(b, x, f"{p}.ln_2", d, opset17)
    h = b.linear(h, f"{p}.mlp.fc1", d, mlp)
    h = gelu(b, h, f"{p}.mlp.gelu")
    h = b.linear(h, f"{p}.mlp.fc2", mlp, d)
    return b.node("Add", [x, h], name=f"{p}.residual_2")


# --------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------

def build_mlp():
    b = Builder()
    h = b.node("Relu", [b.gemm("x", "fc1", 784, 256)], name="relu1")
    h = b.node("Relu", [b.gemm(h, "fc2", 256, 128)], name="relu2")
    h = b.gemm(h, "fc3", 128, 10)
    b.node("Softmax", [h], name="probs", axis=-1)
    return b.model("mlp", [("x", [1, 784])], [("probs", [1, 10])], 13)


def bottleneck(b, x, p, cin, width, stride, downsample):
    """torchvision Bottleneck (v1.5: stride on the 3x3), BN folded into conv weight+bias."""
    h = b.node("Relu", [b.conv(x, f"{p}.conv1", cin, width, 1)], name=f"{p}.relu1")
    h = b.node("Relu", [b.conv(h, f"{p}.conv2", width, width, 3, stride, 1)], name=f"{p}.relu2")
    h = b.conv(h, f"{p}.conv3", width, 4 * width, 1)
    sc = b.conv(x, f"{p}.downsample", cin, 4 * width, 1, stride) if downsample else x
    return b.node("Relu", [b.node("Add", [h, sc], name=f"{p}.add")], name=f"{p}.relu3")


def build_resnet_bottleneck():
    b = Builder()
    h = bottleneck(b, "x", "layer2.0", 256, 128, 2, True)
    h = bottleneck(b, h, "layer2.1", 512, 128, 1, False)
    b.nodes[-1].output[0] = "y"
    return b.model("resnet_bottleneck", [("x", [1, 256, 56, 56])], [("y", [1, 512, 28, 28])], 13)


def inverted_residual(b, x, p, cin, cout, t, stride):
    """torchvision InvertedResidual, BN folded, ReLU6 exported as Clip(x, 0, 6) (opset 11+)."""
    hid = cin * t
    h = x
    if t != 1:
        h = b.node("Clip", [b.conv(h, f"{p}.expand", cin, hid, 1), "clip_min", "clip_max"],
                   name=f"{p}.expand_relu6")
    h = b.node("Clip", [b.conv(h, f"{p}.dw", hid, hid, 3, stride, 1, group=hid),
                        "clip_min", "clip_max"], name=f"{p}.dw_relu6")
    h = b.conv(h, f"{p}.project", hid, cout, 1)
    if stride == 1 and cin == cout:
        h = b.node("Add", [x, h], name=f"{p}.add")
    return h


def build_mobilenetv2_block():
    b = Builder()
    b.scalar("clip_min", 0.0)
    b.scalar("clip_max", 6.0)
    h = inverted_residual(b, "x", "block_a", 24, 24, 6, 1)
    h = inverted_residual(b, h, "block_b", 24, 32, 6, 2)
    b.nodes[-1].output[0] = "y"
    return b.model("mobilenetv2_block", [("x", [1, 24, 56, 56])], [("y", [1, 32, 28, 28])], 13)


def build_transformer_block(opset17):
    b = Builder()
    add_block_constants(b, 64, 256, 4, opset17)
    encoder_block(b, "x", "block", 256, 4, 1024, opset17)
    b.nodes[-1].output[0] = "y"
    return b.model("transformer_block" + ("_opset17" if opset17 else ""),
                   [("x", [1, 64, 256])], [("y", [1, 64, 256])], 17 if opset17 else 13)


def build_dynamic_shapes():
    b = Builder()
    c = b.conv("x", "conv", 8, 16, 3, 1, 1)
    c = b.node("GlobalAveragePool", [c], name="gap")
    # torch.onnx style: x.reshape(x.shape[0], -1) after the pooling, with Constant nodes
    sh = b.node("Shape", [c], name="shape")
    b.nodes.append(helper.make_node("Constant", [], ["idx0"], name="idx0",
                                    value=numpy_helper.from_array(np.array(0, np.int64))))
    n = b.node("Gather", [sh, "idx0"], name="gather_batch", axis=0)
    b.nodes.append(helper.make_node("Constant", [], ["axes0"], name="axes0",
                                    value=numpy_helper.from_array(np.array([0], np.int64))))
    n = b.node("Unsqueeze", [n, "axes0"], name="unsqueeze")
    b.nodes.append(helper.make_node("Constant", [], ["minus1"], name="minus1",
                                    value=numpy_helper.from_array(np.array([-1], np.int64))))
    target = b.node("Concat", [n, "minus1"], name="concat_shape", axis=0)
    r = b.node("Reshape", [c, target], name="reshape")
    b.gemm(r, "fc", 16, 10)
    b.nodes[-1].output[0] = "y"
    return b.model("dynamic_shapes", [("x", ["N", 8, 16, 16])], [("y", ["N", 10])], 13)


def build_concat_resize():
    """Inception/U-Net-style channel concatenations, a nearest Resize, a MaxPool and a Pad."""
    b = Builder()
    a = b.node("Relu", [b.conv("x", "branch_a", 16, 8, 1)], name="relu_a")
    c = b.node("Relu", [b.conv("x", "branch_b", 16, 16, 3, 1, 1)], name="relu_b")
    cat = b.node("Concat", [a, c], name="concat_branches", axis=1)
    d = b.conv(cat, "fuse", 24, 32, 3, 1, 1)
    e = b.node("MaxPool", [d], name="down", kernel_shape=[2, 2], strides=[2, 2])
    # torch.onnx writes the scales as a Constant node (not a parameter).
    b.nodes.append(helper.make_node("Constant", [], ["up_scales"], name="up_scales",
                                    value=numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32))))
    f = b.node("Resize", [e, "", "up_scales"], name="up", mode="nearest")
    g = b.node("Concat", [f, cat], name="concat_skip", axis=1)
    h = b.conv(g, "squeeze", 56, 8, 1)
    b.const("pad_sizes", [0, 0, 1, 1, 0, 0, 1, 1])
    pd = b.node("Pad", [h, "pad_sizes"], name="pad", mode="constant")
    q = b.conv(pd, "head", 8, 4, 3)
    q = b.node("GlobalAveragePool", [q], name="gap")
    q = b.node("Flatten", [q], name="flatten", axis=1)
    b.gemm(q, "fc", 4, 10)
    b.nodes[-1].output[0] = "y"
    return b.model("concat_resize", [("x", [1, 16, 32, 32])], [("y", [1, 10])], 13)


def build_bert_masked():
    """BERT-style: token embedding lookup (Gather on the table with the model's ids), position
    embedding, LayerNormalization, one self-attention whose scores get the padding mask
    computed from the model's attention_mask input, residual Add."""
    b = Builder()
    seq, d, heads = 32, 64, 2
    add_block_constants(b, seq, d, heads, True)
    b.const("mask_axes", [1, 2])
    b.scalar("mask_one", 1.0)
    b.scalar("mask_big", -10000.0)
    table = b.weight("embeddings.word", [100, d])
    x = b.node("Gather", [table, "input_ids"], name="embeddings.lookup", axis=0)
    x = b.node("Add", [x, b.weight("embeddings.position", [1, seq, d])], name="embeddings.add_position")
    x = layer_norm(b, x, "embeddings.ln", d, True)
    m = b.node("Unsqueeze", ["attention_mask", "mask_axes"], name="mask.unsqueeze")
    m = b.node("Cast", [m], name="mask.cast", to=onnx.TensorProto.FLOAT)
    m = b.node("Sub", ["mask_one", m], name="mask.invert")
    m = b.node("Mul", [m, "mask_big"], name="mask.scale")
    p = "layer0"
    qkv = b.linear(x, f"{p}.attn.qkv", d, 3 * d)
    q, k, v = b.node("Split", [qkv, "split_qkv"], name=f"{p}.attn.split", n_out=3, axis=-1)
    q = b.node("Transpose", [b.node("Reshape", [q, "shape_heads"], name=f"{p}.attn.q_reshape")],
               name=f"{p}.attn.q_transpose", perm=[0, 2, 1, 3])
    k = b.node("Transpose", [b.node("Reshape", [k, "shape_heads"], name=f"{p}.attn.k_reshape")],
               name=f"{p}.attn.k_transpose", perm=[0, 2, 3, 1])
    v = b.node("Transpose", [b.node("Reshape", [v, "shape_heads"], name=f"{p}.attn.v_reshape")],
               name=f"{p}.attn.v_transpose", perm=[0, 2, 1, 3])
    sc = b.node("Div", [b.node("MatMul", [q, k], name=f"{p}.attn.qk"), "attn_scale"], name=f"{p}.attn.scale")
    sc = b.node("Add", [sc, m], name=f"{p}.attn.mask")
    sc = b.node("Softmax", [sc], name=f"{p}.attn.softmax", axis=-1)
    o = b.node("MatMul", [sc, v], name=f"{p}.attn.av")
    o = b.node("Reshape", [b.node("Transpose", [o], name=f"{p}.attn.o_transpose", perm=[0, 2, 1, 3]),
                           "shape_merge"], name=f"{p}.attn.o_reshape")
    o = b.linear(o, f"{p}.attn.proj", d, d)
    b.node("Add", [x, o], name=f"{p}.residual")
    b.nodes[-1].output[0] = "y"
    model = b.model("bert_masked", [("input_ids", [1, seq]), ("attention_mask", [1, seq])],
                    [("y", [1, seq, d])], 17)
    for inp in model.graph.input:
        inp.type.tensor_type.elem_type = onnx.TensorProto.INT64
    return model


def build_se_block():
    """Squeeze-excitation (MobileNetV3/EfficientNet): the pooled channel scale, computed by two
    1x1 convs and a Sigmoid, multiplies the feature map (a broadcast over its rows)."""
    b = Builder()
    h = b.node("Relu", [b.conv("x", "conv", 32, 32, 3, 1, 1)], name="relu")
    se = b.node("GlobalAveragePool", [h], name="se.pool")
    se = b.node("Relu", [b.conv(se, "se.fc1", 32, 8, 1)], name="se.relu")
    se = b.node("Sigmoid", [b.conv(se, "se.fc2", 8, 32, 1)], name="se.gate")
    h = b.node("Mul", [h, se], name="se.scale")
    h = b.node("Flatten", [b.node("GlobalAveragePool", [h], name="gap")], name="flatten", axis=1)
    b.gemm(h, "fc", 32, 10)
    b.nodes[-1].output[0] = "y"
    return b.model("se_block", [("x", [1, 32, 16, 16])], [("y", [1, 10])], 13)


def build_unet_up():
    """A U-Net decoder step: ConvTranspose 2x2 stride 2 (the learned upsampling), Relu, conv."""
    b = Builder()
    w = b.weight("up.weight", [16, 8, 2, 2])
    h = b.node("ConvTranspose", ["x", w, b.weight("up.bias", [8])], name="up", kernel_shape=[2, 2],
               strides=[2, 2])
    h = b.node("Relu", [h], name="relu")
    h = b.conv(h, "conv", 8, 4, 3, 1, 1)
    h = b.node("Flatten", [b.node("GlobalAveragePool", [h], name="gap")], name="flatten", axis=1)
    b.gemm(h, "fc", 4, 10)
    b.nodes[-1].output[0] = "y"
    return b.model("unet_up", [("x", [1, 16, 8, 8])], [("y", [1, 10])], 13)


def build_small_convnet(real):
    b = Builder(real_weights=real, seed=7)
    h = b.node("Relu", [b.conv("x", "conv1", 3, 16, 3, 1, 1)], name="relu1")
    h = b.node("Relu", [b.conv(h, "conv2", 16, 32, 3, 2, 1)], name="relu2")
    h = b.node("GlobalAveragePool", [h], name="gap")
    h = b.node("Flatten", [h], name="flatten", axis=1)
    b.gemm(h, "fc", 32, 10)
    b.nodes[-1].output[0] = "y"
    return b.model("small_convnet", [("x", [1, 3, 32, 32])], [("y", [1, 10])], 13)


RESNET50_LAYERS = [(3, 64, 1), (4, 128, 2), (6, 256, 2), (3, 512, 2)]  # (blocks, width, stride)


def build_resnet50():
    b = Builder()
    h = b.node("Relu", [b.conv("x", "conv1", 3, 64, 7, 2, 3)], name="relu")
    h = b.node("MaxPool", [h], name="maxpool", kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 1, 1, 1])
    cin = 64
    for li, (n, w, s) in enumerate(RESNET50_LAYERS):
        for bi in range(n):
            h = bottleneck(b, h, f"layer{li + 1}.{bi}", cin, w, s if bi == 0 else 1, bi == 0)
            cin = 4 * w
    h = b.node("GlobalAveragePool", [h], name="avgpool")
    h = b.node("Flatten", [h], name="flatten", axis=1)
    b.gemm(h, "fc", 2048, 1000)
    b.nodes[-1].output[0] = "logits"
    return b.model("resnet50", [("x", [1, 3, 224, 224])], [("logits", [1, 1000])], 13)


MOBILENETV2_SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                        (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]  # (t, c, n, s)


def build_mobilenetv2():
    b = Builder()
    b.scalar("clip_min", 0.0)
    b.scalar("clip_max", 6.0)
    b.scalar("dropout_ratio", 0.2)
    h = b.node("Clip", [b.conv("x", "features.0", 3, 32, 3, 2, 1), "clip_min", "clip_max"],
               name="features.0.relu6")
    cin, i = 32, 1
    for t, c, n, s in MOBILENETV2_SETTINGS:
        for j in range(n):
            h = inverted_residual(b, h, f"features.{i}", cin, c, t, s if j == 0 else 1)
            cin, i = c, i + 1
    h = b.node("Clip", [b.conv(h, f"features.{i}", 320, 1280, 1), "clip_min", "clip_max"],
               name=f"features.{i}.relu6")
    h = b.node("GlobalAveragePool", [h], name="avgpool")
    h = b.node("Flatten", [h], name="flatten", axis=1)
    h = b.node("Dropout", [h, "dropout_ratio"], name="dropout")
    b.gemm(h, "classifier", 1280, 1000)
    b.nodes[-1].output[0] = "logits"
    return b.model("mobilenetv2", [("x", [1, 3, 224, 224])], [("logits", [1, 1000])], 13)


def build_vit_b16():
    d, heads, mlp, layers, seq = 768, 12, 3072, 12, 197
    b = Builder()
    add_block_constants(b, seq, d, heads, True)
    b.const("shape_patches", [1, d, 196])
    b.const("cls_index", 0)
    h = b.conv("x", "conv_proj", 3, d, 16, 16, 0)
    h = b.node("Reshape", [h, "shape_patches"], name="flatten_patches")
    h = b.node("Transpose", [h], name="patches_transpose", perm=[0, 2, 1])
    cls = b.weight("class_token", [1, 1, d])
    h = b.node("Concat", [cls, h], name="concat_cls", axis=1)
    pos = b.weight("encoder.pos_embedding", [1, seq, d])
    h = b.node("Add", [h, pos], name="add_pos")
    for i in range(layers):
        h = encoder_block(b, h, f"encoder.layers.{i}", d, heads, mlp, True)
    h = layer_norm(b, h, "encoder.ln", d, True)
    h = b.node("Gather", [h, "cls_index"], name="take_cls", axis=1)
    b.gemm(h, "heads.head", d, 1000)
    b.nodes[-1].output[0] = "logits"
    return b.model("vit_b16", [("x", [1, 3, 224, 224])], [("logits", [1, 1000])], 17)


# --------------------------------------------------------------------------------------------
# Analytic counts (independent of the builder: formulas per layer)
# --------------------------------------------------------------------------------------------

def out_hw(h, k, s, p):
    return (h + 2 * p - k) // s + 1


class Tally:
    """Accumulates formula-computed counts."""

    def __init__(self):
        self.macs = self.dw = self.params = self.mm_params = self.largest = 0
        self.nodes = collections.Counter()

    def act(self, *shape):
        self.largest = max(self.largest, math.prod(shape))

    def conv(self, cin, cout, k, h, s=1, p=0, dw=False, bias=True):
        """Square conv on an h x h input; returns the output size."""
        ho = out_hw(h, k, s, p)
        cin_g = 1 if dw else cin
        m = cout * ho * ho * cin_g * k * k
        self.macs += m
        self.dw += m if dw else 0
        self.params += cout * cin_g * k * k + (cout if bias else 0)
        self.nodes["Conv"] += 1
        self.act(cout, ho, ho)
        return ho

    def gemm(self, m, k, n):
        self.macs += m * k * n
        self.params += k * n + n
        self.mm_params += k * n
        self.nodes["Gemm"] += 1
        self.act(m, n)

    def result(self, inputs, opset):
        return {"macs": self.macs, "depthwise_macs": self.dw, "dense_macs": self.macs - self.dw,
                "params": self.params, "matmul_params": self.mm_params,
                "nodes": dict(sorted(self.nodes.items())), "largest_activation": self.largest,
                "inputs": inputs, "opset": opset}


def expected_mlp():
    """
    fc1 Gemm  M=1 K=784 N=256:  MACs 784*256 = 200,704   params 200,704 + 256 = 200,960
    fc2 Gemm  M=1 K=256 N=128:  MACs 256*128 =  32,768   params  32,768 + 128 =  32,896
    fc3 Gemm  M=1 K=128 N=10 :  MACs 128*10  =   1,280   params   1,280 +  10 =   1,290
    total MACs 234,752 = matmul_params; params 235,146; largest activation the input, 784.
    nodes: Gemm 3, Relu 2, Softmax 1.
    """
    t = Tally()
    t.act(1, 784)
    t.gemm(1, 784, 256); t.nodes["Relu"] += 1
    t.gemm(1, 256, 128); t.nodes["Relu"] += 1
    t.gemm(1, 128, 10); t.nodes["Softmax"] += 1
    assert (t.macs, t.params, t.mm_params, t.largest) == (234752, 235146, 234752, 784)
    return t.result({"x": [1, 784]}, 13)


def expected_resnet_bottleneck():
    """
    Input 256x56x56 (802,816 elements, the largest tensor).
    Block layer2.0 (downsampling, stride in the 3x3):
      conv1 1x1 256->128, 56x56: 128*56*56*256     = 102,760,448   params 32,768+128  =  32,896
      conv2 3x3 128->128 s2 p1, 28x28: 128*784*1152 = 115,605,504   params 147,456+128 = 147,584
      conv3 1x1 128->512, 28x28: 512*784*128        =  51,380,224   params 65,536+512  =  66,048
      downsample 1x1 256->512 s2: 512*784*256       = 102,760,448   params 131,072+512 = 131,584
      block MACs 372,506,624; params 378,112
    Block layer2.1 (identity shortcut), 28x28:
      conv1 1x1 512->128: 128*784*512   =  51,380,224   params 65,536+128  =  65,664
      conv2 3x3 128->128: 128*784*1152  = 115,605,504   params 147,584
      conv3 1x1 128->512: 512*784*128   =  51,380,224   params 66,048
      block MACs 218,365,952; params 279,296
    Total MACs 590,872,576, params 657,408, no matmul params.
    nodes: Conv 7, Relu 6, Add 2.
    """
    t = Tally()
    t.act(256, 56, 56)
    h = 56
    t.conv(256, 128, 1, h); t.nodes["Relu"] += 1
    h2 = t.conv(128, 128, 3, h, 2, 1); t.nodes["Relu"] += 1
    t.conv(128, 512, 1, h2)
    t.conv(256, 512, 1, h, 2)
    t.nodes["Add"] += 1; t.nodes["Relu"] += 1
    t.conv(512, 128, 1, h2); t.nodes["Relu"] += 1
    t.conv(128, 128, 3, h2, 1, 1); t.nodes["Relu"] += 1
    t.conv(128, 512, 1, h2)
    t.nodes["Add"] += 1; t.nodes["Relu"] += 1
    assert (t.macs, t.params, t.largest) == (590872576, 657408, 802816)
    return t.result({"x": [1, 256, 56, 56]}, 13)


def expected_mobilenetv2_block():
    """
    Input 24x56x56.  Clip bounds are rank-0 constants (not params).
    Block a (t=6, stride 1, residual):
      expand 1x1 24->144 @56x56:   144*3136*24 = 10,838,016   params 3,456+144 = 3,600
      dw 3x3 g=144 s1 @56x56:      144*3136*9  =  4,064,256 (depthwise)   params 1,296+144 = 1,440
      project 1x1 144->24 @56x56:  24*3136*144 = 10,838,016   params 3,456+24 = 3,480
    Block b (t=6, stride 2, no residual):
      expand 1x1 24->144 @56x56:   10,838,016                 params 3,600
      dw 3x3 g=144 s2 -> 28x28:    144*784*9   =  1,016,064 (depthwise)   params 1,440
      project 1x1 144->32 @28x28:  32*784*144  =  3,612,672   params 4,608+32 = 4,640
    MACs 41,207,040 of which depthwise 5,080,320 (dense 36,126,720); params 18,200.
    Largest activation 144x56x56 = 451,584.  nodes: Conv 6, Clip 4, Add 1.
    """
    t = Tally()
    t.act(24, 56, 56)
    t.conv(24, 144, 1, 56); t.nodes["Clip"] += 1
    t.conv(144, 144, 3, 56, 1, 1, dw=True); t.nodes["Clip"] += 1
    t.conv(144, 24, 1, 56); t.nodes["Add"] += 1
    t.conv(24, 144, 1, 56); t.nodes["Clip"] += 1
    h = t.conv(144, 144, 3, 56, 2, 1, dw=True); t.nodes["Clip"] += 1
    t.conv(144, 32, 1, h)
    assert (t.macs, t.dw, t.params, t.largest) == (41207040, 5080320, 18200, 451584)
    return t.result({"x": [1, 24, 56, 56]}, 13)


def tally_encoder_block(t, seq, d, heads, mlp, opset17):
    """Formulas for one pre-LN encoder block (see encoder_block for the op sequence)."""
    hd = d // heads
    # MatMul MACs: qkv, Q.K^T (per head seq x hd x seq), A.V (per head seq x seq x hd), proj, fc1, fc2
    t.macs += seq * d * 3 * d + heads * seq * seq * hd + heads * seq * seq * hd \
        + seq * d * d + seq * d * mlp + seq * mlp * d
    t.mm_params += d * 3 * d + d * d + d * mlp + mlp * d
    t.params += (d * 3 * d + 3 * d) + (d * d + d) + (d * mlp + mlp) + (mlp * d + d) + 2 * (2 * d)
    t.act(seq, mlp); t.act(seq, 3 * d); t.act(heads, seq, seq)
    if opset17:
        t.nodes["LayerNormalization"] += 2
    else:  # per LN: ReduceMean x2, Sub, Pow, Add (eps), Sqrt, Div, Mul, Add (beta)
        for op, n in (("ReduceMean", 2), ("Sub", 1), ("Pow", 1), ("Add", 2), ("Sqrt", 1),
                      ("Div", 1), ("Mul", 1)):
            t.nodes[op] += 2 * n
    # attention: qkv MatMul+Add, Split, 3 Reshape, 3 Transpose, MatMul, Div, Softmax, MatMul,
    # Transpose, Reshape, proj MatMul+Add, residual Add
    # MLP: MatMul+Add, Gelu (Div, Erf, Add, Mul, Mul), MatMul+Add, residual Add
    for op, n in (("MatMul", 6), ("Add", 3 + 4), ("Split", 1), ("Reshape", 4),
                  ("Transpose", 4), ("Div", 2), ("Softmax", 1), ("Erf", 1), ("Mul", 2)):
        t.nodes[op] += n


def expected_transformer_block(opset17):
    """
    seq 64, d 256, 4 heads of 64, MLP 1024.
      qkv   MatMul (64x256)x(256x768):      64*256*768      = 12,582,912   params 196,608+768
      Q.K^T MatMul (1,4,64,64)x(1,4,64,64): 4*64*64*64      =  1,048,576
      A.V   MatMul (1,4,64,64)x(1,4,64,64): 4*64*64*64      =  1,048,576
      proj  MatMul (64x256)x(256x256):      64*256*256      =  4,194,304   params 65,536+256
      fc1   MatMul (64x256)x(256x1024):     64*256*1024     = 16,777,216   params 262,144+1,024
      fc2   MatMul (64x1024)x(1024x256):    64*1024*256     = 16,777,216   params 262,144+256
      LN gamma+beta: 2 * 512 = 1,024
    MACs 52,428,800; params 789,760; matmul params 786,432; largest activation 64x1024 = 65,536.
    opset 13 nodes: MatMul 6, Add 11, ReduceMean 4, Sub 2, Pow 2, Sqrt 2, Div 4, Mul 4, Split 1,
      Reshape 4, Transpose 4, Softmax 1, Erf 1  (46 nodes)
    opset 17 nodes: LayerNormalization 2, MatMul 6, Add 7, Div 2, Mul 2, Split 1, Reshape 4,
      Transpose 4, Softmax 1, Erf 1  (30 nodes)
    """
    t = Tally()
    t.act(64, 256)
    tally_encoder_block(t, 64, 256, 4, 1024, opset17)
    assert (t.macs, t.params, t.mm_params, t.largest) == (52428800, 789760, 786432, 65536)
    assert sum(t.nodes.values()) == (30 if opset17 else 46)
    return t.result({"x": [1, 64, 256]}, 17 if opset17 else 13)


def expected_dynamic_shapes():
    """
    For N = 1 (the importer is given --input x=1x8x16x16):
      conv 3x3 8->16 p1 @16x16: 16*256*72 = 294,912   params 1,152+16 = 1,168
      GlobalAveragePool -> (1,16,1,1); Reshape (1,16,1,1) -> (1,16)
      fc Gemm 16->10:           16*10     =     160   params 160+10 = 170
    MACs 295,072; params 1,338; matmul params 160; largest activation 4,096.
    nodes: Conv, GlobalAveragePool, Shape, Gather, Unsqueeze, Concat, Reshape, Gemm 1 each,
    Constant 3.
    """
    t = Tally()
    t.act(8, 16, 16)
    t.conv(8, 16, 3, 16, 1, 1)
    for op in ("GlobalAveragePool", "Shape", "Gather", "Unsqueeze", "Concat", "Reshape"):
        t.nodes[op] += 1
    t.nodes["Constant"] += 3
    t.gemm(1, 16, 10)
    assert (t.macs, t.params, t.mm_params, t.largest) == (295072, 1338, 160, 4096)
    return t.result({"x": ["N", 8, 16, 16]}, 13)


def expected_small_convnet():
    """
    Input 3x32x32.
      conv1 3x3 3->16 p1 @32x32:     16*1024*27  =   442,368   params 432+16   =   448
      conv2 3x3 16->32 s2 p1 ->16x16: 32*256*144 = 1,179,648   params 4,608+32 = 4,640
      fc Gemm 32->10:                 32*10      =       320   params 320+10   =   330
    MACs 1,622,336; params 5,418; matmul params 320; largest activation 16x32x32 = 16,384.
    nodes: Conv 2, Relu 2, GlobalAveragePool 1, Flatten 1, Gemm 1.
    """
    t = Tally()
    t.act(3, 32, 32)
    h = t.conv(3, 16, 3, 32, 1, 1); t.nodes["Relu"] += 1
    t.conv(16, 32, 3, h, 2, 1); t.nodes["Relu"] += 1
    t.nodes["GlobalAveragePool"] += 1; t.nodes["Flatten"] += 1
    t.gemm(1, 32, 10)
    assert (t.macs, t.params, t.mm_params, t.largest) == (1622336, 5418, 320, 16384)
    return t.result({"x": [1, 3, 32, 32]}, 13)


def expected_concat_resize():
    """
    Input 16x32x32.
      branch_a 1x1 16->8:       8*1024*16   =   131,072   params 128+8     =   136
      branch_b 3x3 16->16 p1:  16*1024*144  = 2,359,296   params 2,304+16  = 2,320
      concat -> 24x32x32; fuse 3x3 24->32 p1: 32*1024*216 = 7,077,888   params 6,912+32 = 6,944
      maxpool 2x2/2 -> 32x16x16; resize x2 -> 32x32x32; concat with the 24 -> 56x32x32
      squeeze 1x1 56->8:        8*1024*56   =   458,752   params 448+8     =   456
      pad 1 -> 8x34x34; head 3x3 8->4 p0 -> 4x32x32: 4*1024*72 = 294,912   params 288+4 = 292
      fc Gemm 4->10:            4*10        =        40   params 40+10     =    50
    MACs 10,321,960; params 10,198; matmul params 40; largest activation 56x32x32 = 57,344.
    """
    t = Tally()
    t.act(16, 32, 32)
    t.conv(16, 8, 1, 32)
    t.conv(16, 16, 3, 32, 1, 1)
    t.act(24, 32, 32)
    t.conv(24, 32, 3, 32, 1, 1)
    t.act(56, 32, 32)
    t.conv(56, 8, 1, 32)
    t.act(8, 34, 34)
    t.conv(8, 4, 3, 34)
    for op, n in (("Relu", 2), ("Concat", 2), ("MaxPool", 1), ("Resize", 1), ("Pad", 1),
                  ("GlobalAveragePool", 1), ("Flatten", 1), ("Constant", 1)):
        t.nodes[op] += n
    t.gemm(1, 4, 10)
    assert (t.macs, t.params, t.mm_params, t.largest) == (10321960, 10198, 40, 57344)
    return t.result({"x": [1, 16, 32, 32]}, 13)


def expected_bert_masked():
    """
    seq 32, d 64, 2 heads of 32; vocabulary 100.
      qkv   MatMul (32x64)x(64x192):      32*64*192 = 393,216   params 12,288+192
      Q.K^T 2 heads (32x32)x(32x32):      2*32*32*32 =  65,536
      A.V   2 heads:                      2*32*32*32 =  65,536
      proj  MatMul (32x64)x(64x64):       32*64*64  = 131,072   params 4,096+64
      word embeddings 100*64 = 6,400; position embeddings 32*64 = 2,048; LN gamma+beta 128
    MACs 655,360; params 25,216; matmul params 16,384; largest activation 32x192 = 6,144.
    """
    t = Tally()
    t.macs += 393216 + 65536 + 65536 + 131072
    t.params += 12288 + 192 + 4096 + 64 + 6400 + 2048 + 128
    t.mm_params += 12288 + 4096
    t.act(32, 192)
    for op, n in (("Gather", 1), ("Add", 5), ("LayerNormalization", 1), ("Unsqueeze", 1),
                  ("Cast", 1), ("Sub", 1), ("Mul", 1), ("MatMul", 4), ("Split", 1),
                  ("Reshape", 4), ("Transpose", 4), ("Div", 1), ("Softmax", 1)):
        t.nodes[op] += n
    assert (t.macs, t.params, t.mm_params, t.largest) == (655360, 25216, 16384, 6144)
    return t.result({"input_ids": [1, 32], "attention_mask": [1, 32]}, 17)


def expected_se_block():
    """
    Input 32x16x16.
      conv 3x3 32->32 p1:       32*256*288 = 2,359,296   params 9,216+32 = 9,248
      se.fc1 1x1 32->8 at 1x1:   8*1*32    =       256   params 256+8    =   264
      se.fc2 1x1 8->32 at 1x1:  32*1*8     =       256   params 256+32   =   288
      fc Gemm 32->10:           32*10      =       320   params 320+10   =   330
    MACs 2,360,128; params 10,130; matmul params 320; largest activation 32x16x16 = 8,192.
    """
    t = Tally()
    t.act(32, 16, 16)
    t.conv(32, 32, 3, 16, 1, 1)
    t.conv(32, 8, 1, 1)
    t.conv(8, 32, 1, 1)
    for op, n in (("Relu", 2), ("GlobalAveragePool", 2), ("Sigmoid", 1), ("Mul", 1), ("Flatten", 1)):
        t.nodes[op] += n
    t.gemm(1, 32, 10)
    assert (t.macs, t.params, t.mm_params, t.largest) == (2360128, 10130, 320, 8192)
    return t.result({"x": [1, 32, 16, 16]}, 13)


def expected_unet_up():
    """
    Input 16x8x8.
      up ConvTranspose 2x2/2 16->8 -> 8x16x16: each input element scatters 8*2*2:
                                16*64*32  =  32,768   params 512+8   = 520
      conv 3x3 8->4 p1 @16x16:  4*256*72  =  73,728   params 288+4   = 292
      fc Gemm 4->10:            4*10      =      40   params 40+10   =  50
    MACs 106,536; params 862; matmul params 40; largest activation 8x16x16 = 2,048.
    """
    t = Tally()
    t.act(16, 8, 8)
    t.macs += 32768
    t.params += 520
    t.nodes["ConvTranspose"] += 1
    t.act(8, 16, 16)
    t.conv(8, 4, 3, 16, 1, 1)
    for op in ("Relu", "GlobalAveragePool", "Flatten"):
        t.nodes[op] += 1
    t.gemm(1, 4, 10)
    assert (t.macs, t.params, t.mm_params, t.largest) == (106536, 862, 40, 2048)
    return t.result({"x": [1, 16, 8, 8]}, 13)


def expected_resnet50():
    """Stem 7x7/2 conv: 64*112*112*147 = 118,013,952 MACs.  Bottleneck (cin, width w, stride s)
    at input size h, output ho = h/s: w*h*h*cin + w*ho*ho*9w + 4w*ho*ho*w (+ 4w*ho*ho*cin for
    the first block's 1x1/s shortcut).  fc 2048*1000.  Totals: 4,089,184,256 MACs,
    25,530,472 params (torchvision's 25,557,032 minus 26,560 BN channels: folded BN keeps
    one bias per channel instead of gamma and beta)."""
    t = Tally()
    t.act(3, 224, 224)
    h = t.conv(3, 64, 7, 224, 2, 3)            # 112
    t.nodes["Relu"] += 1
    h = out_hw(h, 3, 2, 1)                     # maxpool -> 56
    t.nodes["MaxPool"] += 1
    cin = 64
    for n, w, s in RESNET50_LAYERS:
        for i in range(n):
            st = s if i == 0 else 1
            t.conv(cin, w, 1, h)
            ho = t.conv(w, w, 3, h, st, 1)
            t.conv(w, 4 * w, 1, ho)
            if i == 0:
                t.conv(cin, 4 * w, 1, h, st)
            t.nodes["Relu"] += 3
            t.nodes["Add"] += 1
            h, cin = ho, 4 * w
    t.nodes["GlobalAveragePool"] += 1; t.nodes["Flatten"] += 1
    t.gemm(1, 2048, 1000)
    assert t.nodes["Conv"] == 1 + 16 * 3 + 4
    return t.result({"x": [1, 3, 224, 224]}, 13)


def expected_mobilenetv2():
    """Stem 3x3/2 conv 3->32; per inverted residual (cin, t, c, s) at size h, hid = t*cin:
    expand hid*h*h*cin (t != 1), depthwise hid*ho*ho*9, project c*ho*ho*hid; last 1x1
    320->1280 at 7x7; fc 1280*1000.  Totals: 300,774,272 MACs (20,716,416 depthwise),
    3,487,816 params (torchvision's 3,504,872 minus 17,056 BN channels)."""
    t = Tally()
    t.act(3, 224, 224)
    h = t.conv(3, 32, 3, 224, 2, 1); t.nodes["Clip"] += 1
    cin = 32
    for tt, c, n, s in MOBILENETV2_SETTINGS:
        for i in range(n):
            st = s if i == 0 else 1
            hid = cin * tt
            if tt != 1:
                t.conv(cin, hid, 1, h); t.nodes["Clip"] += 1
            ho = t.conv(hid, hid, 3, h, st, 1, dw=True); t.nodes["Clip"] += 1
            t.conv(hid, c, 1, ho)
            if st == 1 and cin == c:
                t.nodes["Add"] += 1
            h, cin = ho, c
    t.conv(320, 1280, 1, h); t.nodes["Clip"] += 1
    for op in ("GlobalAveragePool", "Flatten", "Dropout"):
        t.nodes[op] += 1
    t.gemm(1, 1280, 1000)
    assert t.nodes["Conv"] == 52 and t.nodes["Add"] == 10
    return t.result({"x": [1, 3, 224, 224]}, 13)


def expected_vit_b16():
    """Patch conv 768*196*768 = 115,605,504.  Per block (seq 197, d 768, 12 heads, MLP 3072):
    qkv 197*768*2304 = 348,585,984; Q.K^T and A.V 12*197*197*64 = 29,805,312 each;
    proj 197*768*768 = 116,195,328; fc1, fc2 197*768*3072 = 464,781,312 each;
    block 1,453,954,560, x12 = 17,447,454,720.  Head 768,000.  Total 17,563,828,224.
    Params: patch 590,592 + cls 768 + pos 151,296 + 12 * 7,087,872 + final LN 1,536
    + head 769,000 = 86,567,656 (torchvision's num_params exactly)."""
    d, heads, mlp, layers, seq = 768, 12, 3072, 12, 197
    t = Tally()
    t.act(3, 224, 224)
    t.conv(3, d, 16, 224, 16, 0)               # 768 x 14 x 14
    t.nodes["Reshape"] += 1; t.nodes["Transpose"] += 1
    t.params += d                              # class token 1x1x768
    t.nodes["Concat"] += 1
    t.params += seq * d                        # position embedding 1x197x768
    t.nodes["Add"] += 1
    t.act(seq, d)
    for _ in range(layers):
        tally_encoder_block(t, seq, d, heads, mlp, True)
    t.params += 2 * d; t.nodes["LayerNormalization"] += 1
    t.nodes["Gather"] += 1
    t.gemm(1, d, 1000)
    return t.result({"x": [1, 3, 224, 224]}, 17)


# --------------------------------------------------------------------------------------------
# Independent check: walk the saved file after shape inference
# --------------------------------------------------------------------------------------------

def read_shapes(g):
    shapes = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        tt = vi.type.tensor_type
        if tt.HasField("shape"):
            shapes[vi.name] = [dd.dim_value if dd.HasField("dim_value") else None
                               for dd in tt.shape.dim]
    for t in g.initializer:
        shapes[t.name] = list(t.dims)
    return shapes


def fold_shape_tensors(g, shapes):
    """Evaluate int64 shape arithmetic (Constant, Shape, Gather, Unsqueeze, Concat) with numpy
    and return {reshape output: shape} for Reshape nodes whose shape inference left the output
    unknown but whose target shape can be computed."""
    vals = {t.name: numpy_helper.to_array(t) for t in g.initializer if t.data_type == INT64}
    folded = {}
    for n in g.node:
        a = {at.name: helper.get_attribute_value(at) for at in n.attribute}
        try:
            if n.op_type == "Constant" and "value" in a:
                vals[n.output[0]] = numpy_helper.to_array(a["value"])
            elif n.op_type == "Shape":
                s = shapes.get(n.input[0])
                if s is not None and None not in s:
                    vals[n.output[0]] = np.array(s, np.int64)
            elif n.op_type == "Gather" and all(i in vals for i in n.input):
                vals[n.output[0]] = np.take(vals[n.input[0]], vals[n.input[1]],
                                            axis=a.get("axis", 0))
            elif n.op_type == "Unsqueeze" and all(i in vals for i in n.input):
                v = vals[n.input[0]]
                for ax in sorted(int(x) for x in vals[n.input[1]]):
                    v = np.expand_dims(v, ax)
                vals[n.output[0]] = v
            elif n.op_type == "Concat" and all(i in vals for i in n.input):
                vals[n.output[0]] = np.concatenate([vals[i] for i in n.input], axis=a["axis"])
            elif n.op_type == "Reshape" and n.input[1] in vals:
                s, out = shapes.get(n.input[0]), shapes.get(n.output[0])
                if s is None or None in s or (out is not None and None not in out):
                    continue
                tgt = [s[i] if v == 0 else int(v) for i, v in enumerate(vals[n.input[1]])]
                if -1 in tgt:
                    tgt[tgt.index(-1)] = math.prod(s) // -math.prod(tgt)
                folded[n.output[0]] = tgt
        except (KeyError, ValueError, IndexError):
            continue
    return folded


def walk_counts(path, fix_dims=None):
    """Counts read from the ONNX file only: op types, attributes, initializer dims and the
    shapes onnx.shape_inference infers.  fix_dims maps a dim_param name to a value (e.g.
    {"N": 1}).  Returns (counts, notes) where notes lists what could not be resolved."""
    m = onnx.load(path, load_external_data=False)
    g = m.graph
    for vi in g.input:
        for dim in vi.type.tensor_type.shape.dim:
            if dim.dim_param and fix_dims and dim.dim_param in fix_dims:
                dim.dim_value = fix_dims[dim.dim_param]
    notes = []
    for attempt in range(3):
        inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True, data_prop=True)
        shapes = read_shapes(inferred.graph)
        folded = fold_shape_tensors(inferred.graph, shapes)
        if not folded:
            break
        # onnx's own inference left these unknown: pin them and infer again
        notes.append("onnx %s shape inference (data_prop=True) left unknown, folded by the "
                     "walk: %s" % (onnx.__version__,
                                   ", ".join(f"{k}={v}" for k, v in sorted(folded.items()))))
        for name, s in folded.items():
            m.graph.value_info.append(helper.make_tensor_value_info(name, FLOAT, s))
    m = inferred
    g = m.graph
    inits = {t.name: t for t in g.initializer}

    def shp(name):
        s = shapes.get(name)
        if s is None or any(v is None for v in s):
            notes.append(f"unknown shape of {name}: {s}")
            return None
        return s

    macs = dw = 0
    for n in g.node:
        a = {at.name: helper.get_attribute_value(at) for at in n.attribute}
        if n.op_type in ("Conv", "ConvTranspose"):
            xs, ws, ys = shp(n.input[0]), shp(n.input[1]), shp(n.output[0])
            if None in (xs, ws, ys):
                continue
            grp = a.get("group", 1)
            if n.op_type == "Conv":   # each output element: Cin/g * kh * kw MACs
                m_ = math.prod(ys) * math.prod(ws[1:])
            else:                     # each input element scatters Cout/g * kh * kw MACs
                m_ = math.prod(xs) * math.prod(ws[1:])
            macs += m_
            if grp > 1 and grp == xs[1] == ys[1]:
                dw += m_
        elif n.op_type == "Gemm":
            As, Bs = shp(n.input[0]), shp(n.input[1])
            if None in (As, Bs):
                continue
            M, K = (As[1], As[0]) if a.get("transA", 0) else (As[0], As[1])
            N = Bs[0] if a.get("transB", 0) else Bs[1]
            macs += M * K * N
        elif n.op_type == "MatMul":
            As, ys = shp(n.input[0]), shp(n.output[0])
            if None in (As, ys):
                continue
            macs += math.prod(ys) * As[-1]   # each output element is a K-long dot product
    params = sum(math.prod(t.dims) for t in g.initializer
                 if t.data_type == FLOAT and len(t.dims) >= 1)
    mm_params = 0
    for n in g.node:
        if n.op_type in ("MatMul", "Gemm"):
            for i in n.input[:2]:
                if i in inits:
                    mm_params += math.prod(inits[i].dims)
    acts = [vi.name for vi in g.input] + [o for n in g.node for o in n.output]
    largest = 0
    for name in acts:
        s = shapes.get(name)
        if s is None or any(v is None for v in s):
            notes.append(f"unknown shape of activation {name}: {s}")
            continue
        largest = max(largest, math.prod(s))
    counts = {"macs": macs, "depthwise_macs": dw, "dense_macs": macs - dw, "params": params,
              "matmul_params": mm_params,
              "nodes": dict(sorted(collections.Counter(n.op_type for n in g.node).items())),
              "largest_activation": largest}
    return counts, sorted(set(notes))


def checker_verdict(model_or_path):
    try:
        onnx.checker.check_model(model_or_path)
        return "ok"
    except Exception as e:  # noqa: BLE001 - record whatever the checker says
        return f"rejected: {str(e).strip().splitlines()[0]}"


def zero_filled(model):
    """Copy of the model with every data-less initializer given zero raw_data."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for t in m.graph.initializer:
        if not t.raw_data and not t.float_data and not t.int64_data and not t.external_data:
            t.raw_data = bytes(4 * math.prod(t.dims))
    return m


PUBLISHED = {
    # name: (macs, params, source)
    "resnet50.onnx": (4.09e9, 25_557_032,
                      "torchvision ResNet50_Weights: GFLOPS 4.09 (counted as MACs), "
                      "num_params 25,557,032"),
    "mobilenetv2.onnx": (300e6, 3_504_872,
                         "torchvision MobileNet_V2_Weights: GFLOPS 0.30, num_params 3,504,872; "
                         "Sandler et al. 2018: 300M multiply-adds, 3.4M params"),
    "vit_b16.onnx": (17.56e9, 86_567_656,
                     "torchvision ViT_B_16_Weights: GFLOPS 17.56, num_params 86,567,656"),
}


def at_old_opset(build, opset):
    """The same model at an older opset (as older exporters and converters write it): Clip's
    bounds and Dropout's ratio become attributes (inputs only from opsets 11 and 12)."""
    def make():
        model = build()
        g = model.graph
        scalars = {t.name: float(numpy_helper.to_array(t)) for t in g.initializer if len(t.dims) == 0}
        for n in g.node:
            if n.op_type == "Clip" and opset < 11 and len(n.input) == 3:
                lo, hi = scalars[n.input[1]], scalars[n.input[2]]
                del n.input[1:]
                n.attribute.extend([helper.make_attribute("min", lo), helper.make_attribute("max", hi)])
            if n.op_type == "Dropout" and opset < 12 and len(n.input) > 1:
                ratio = scalars[n.input[1]]
                del n.input[1:]
                n.attribute.extend([helper.make_attribute("ratio", ratio)])
        used = {i for n in g.node for i in n.input}
        keep = [t for t in g.initializer if t.name in used]
        del g.initializer[:]
        g.initializer.extend(keep)
        del model.opset_import[:]
        model.opset_import.extend([helper.make_opsetid("", opset)])
        return model
    return make


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    do_check = "--no-check" not in argv
    if len(args) != 1:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    out = args[0]
    os.makedirs(out, exist_ok=True)
    t0 = time.time()
    specs = [
        ("mlp.onnx", build_mlp, expected_mlp),
        ("resnet_bottleneck.onnx", build_resnet_bottleneck, expected_resnet_bottleneck),
        ("mobilenetv2_block.onnx", build_mobilenetv2_block, expected_mobilenetv2_block),
        ("transformer_block.onnx", lambda: build_transformer_block(False),
         lambda: expected_transformer_block(False)),
        ("transformer_block_opset17.onnx", lambda: build_transformer_block(True),
         lambda: expected_transformer_block(True)),
        ("dynamic_shapes.onnx", build_dynamic_shapes, expected_dynamic_shapes),
        ("external_weights.onnx", lambda: build_small_convnet(True), expected_small_convnet),
        ("stripped_weights.onnx", lambda: build_small_convnet(False), expected_small_convnet),
        ("concat_resize.onnx", build_concat_resize, expected_concat_resize),
        ("bert_masked.onnx", build_bert_masked, expected_bert_masked),
        ("se_block.onnx", build_se_block, expected_se_block),
        ("unet_up.onnx", build_unet_up, expected_unet_up),
        ("resnet50_opset9.onnx", at_old_opset(build_resnet50, 9), expected_resnet50),
        ("mobilenetv2_opset9.onnx", at_old_opset(build_mobilenetv2, 9), expected_mobilenetv2),
        ("resnet50.onnx", build_resnet50, expected_resnet50),
        ("mobilenetv2.onnx", build_mobilenetv2, expected_mobilenetv2),
        ("vit_b16.onnx", build_vit_b16, expected_vit_b16),
    ]
    expected = {}
    ok = True
    for fname, build, exp in specs:
        path = os.path.join(out, fname)
        model = build()
        if fname == "external_weights.onnx":
            data = "external_weights.data"
            if os.path.exists(os.path.join(out, data)):
                os.remove(os.path.join(out, data))  # save_model appends to an existing file
            onnx.save_model(model, path, save_as_external_data=True,
                            all_tensors_to_one_file=True, location=data, size_threshold=0)
        else:
            onnx.save_model(model, path)
        e = exp()
        e["opset"] = model.opset_import[0].version
        e["file_bytes"] = os.path.getsize(path)
        if fname == "external_weights.onnx":
            e["external_data"] = {"location": data,
                                  "bytes": os.path.getsize(os.path.join(out, data))}
        if fname == "dynamic_shapes.onnx":
            e["fold_inputs"] = {"x": [1, 8, 16, 16]}
        onnx.load(path)  # must load (with external data where present)
        if do_check:
            walked, notes = walk_counts(path, {"N": 1})
            diffs = {k: (e[k], walked[k]) for k in walked if e[k] != walked[k]}
            e["check"] = {"graph_walk_agrees": not diffs,
                          "checker_file": checker_verdict(path),
                          "checker_zero_filled": "ok" if fname == "external_weights.onnx"
                          else checker_verdict(zero_filled(onnx.load(path)))}
            if notes:
                e["check"]["shape_inference_notes"] = notes
            if diffs:
                ok = False
                e["check"]["diffs"] = {k: {"analytic": a, "walk": w} for k, (a, w) in diffs.items()}
                print(f"MISMATCH {fname}: {diffs}", file=sys.stderr)
        if fname in PUBLISHED:
            pm, pp, src = PUBLISHED[fname]
            e["published"] = {"macs": pm, "params": pp, "source": src,
                              "macs_rel_diff": round(e["macs"] / pm - 1, 5),
                              "params_rel_diff": round(e["params"] / pp - 1, 5)}
            if abs(e["macs"] / pm - 1) > 0.02 or abs(e["params"] / pp - 1) > 0.02:
                ok = False
                print(f"{fname}: more than 2 % from the published figures", file=sys.stderr)
        expected[fname] = e
        print(f"{fname:32s} {e['file_bytes']:>8d} B  macs {e['macs']:>14,d}  "
              f"dw {e['depthwise_macs']:>11,d}  params {e['params']:>11,d}  "
              f"nodes {sum(e['nodes'].values()):4d}  largest {e['largest_activation']:,d}"
              + ("" if not do_check else
                 f"  walk {'==' if e['check']['graph_walk_agrees'] else '!='}"))
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {len(expected)} models to {out} in {time.time() - t0:.2f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
