"""Problem.from_torch: a torch module exported to ONNX in memory and imported like Problem.from_onnx.

The MAC counts are by hand: a convolution is H*W*C_out*C_in*k*k per image, a Linear
rows*in*out, attention 2 * heads * seq^2 * head_dim. The problem's compute is the sum of M*K*N
over its MatMul ops (the importer keeps the model's MACs exact, docs/model-import.md).
"""
import runpy
import sys

import pytest

import annealer

try:
    import torch
except ImportError:  # the tests that need it are skipped; test_without_torch still runs
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not importable")
# torch.nn.functional's own shape asserts, traced by the export of attention: not the module's.
pytestmark = pytest.mark.filterwarnings("ignore:Converting a tensor to a Python")


def matmul_macs(problem) -> int:
    """Sum of M*K*N over the problem's MatMul ops: output height x output width x LHS width."""
    d = problem.to_dict()
    total = 0
    for op_type, inputs, outputs in zip(d["op_types"], d["inputs"], d["outputs"]):
        if op_type == "MatMul":
            out, lhs = outputs[0], inputs[0]
            total += d["heights"][out] * d["widths"][out] * d["widths"][lhs]
    return total


if torch is not None:
    class ConvNet(torch.nn.Module):
        """Two padded 3x3 convolutions, global average pooling and a classifier."""

        def __init__(self):
            super().__init__()
            self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.c2 = torch.nn.Conv2d(8, 16, 3, padding=1)
            self.fc = torch.nn.Linear(16, 10)

        def forward(self, x):
            x = torch.relu(self.c1(x))
            x = torch.relu(self.c2(x))
            return self.fc(x.mean(dim=(2, 3)))

    def conv_net():
        torch.manual_seed(0)
        return ConvNet(), torch.randn(1, 3, 16, 16)

    def encoder():
        """One post-norm encoder layer: d_model 32, 4 heads, feed-forward 64, sequence 8."""
        torch.manual_seed(0)
        layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)
        return torch.nn.TransformerEncoder(layer, 1), torch.randn(1, 8, 32)

    # c1: 16*16 pixels * 8 out * 3 in * 9 taps; c2: 16*16 * 16 * 8 * 9; fc: 16 * 10. The mean over
    # the 16x16 pixels of 16 channels is a ones-row MatMul (data movement, not model MACs): 4096.
    CONV_NET_MACS = 16 * 16 * 8 * 3 * 9 + 16 * 16 * 16 * 8 * 9 + 16 * 10
    CONV_NET_MEAN_MACS = 16 * 16 * 16
    # QKV projection 8*32*96, scores and attention x V 2 * 4 heads * 8*8*8, output projection
    # 8*32*32, feed-forward 8*32*64 + 8*64*32 (layer norms and softmax are vector work).
    ENCODER_MACS = 8 * 32 * 96 + 2 * 4 * 8 * 8 * 8 + 8 * 32 * 32 + 8 * 32 * 64 + 8 * 64 * 32


def export_file(module, example, path, opset=17):
    """The file route: the same export written to disk."""
    torch.onnx.export(module.eval(), (example,), path, opset_version=opset, do_constant_folding=True)
    return path


@needs_torch
def test_conv_net_macs_are_the_hand_count():
    module, x = conv_net()
    p = annealer.Problem.from_torch(module, x, hardware="tpu-v5e")
    assert matmul_macs(p) == CONV_NET_MACS + CONV_NET_MEAN_MACS == 354_464
    tpu = annealer.hardware_profile("tpu-v5e")
    assert (p.capacity, p.bandwidth, p.native) == (tpu["capacity"], tpu["bandwidth"], tpu["native"])


@needs_torch
def test_transformer_encoder_macs_are_the_hand_count():
    module, x = encoder()
    p = annealer.Problem.from_torch(module, x, hardware="tpu-v5e")
    assert matmul_macs(p) == ENCODER_MACS == 69_632


@needs_torch
@pytest.mark.parametrize("make", ["conv_net", "encoder"])
def test_same_problem_as_the_file_route(make, tmp_path):
    module, x = globals()[make]()
    from_torch = annealer.Problem.from_torch(module, x, hardware="gemmini-default")
    path = export_file(module, x, str(tmp_path / f"{make}.onnx"))
    from_file = annealer.Problem.from_onnx(path, hardware="gemmini-default")
    assert from_torch == from_file
    assert from_torch.to_json() == from_file.to_json()


@needs_torch
def test_deterministic():
    module, x = encoder()
    first = annealer.Problem.from_torch(module, x, hardware="tpu-v5e").to_json()
    assert annealer.Problem.from_torch(module, x, hardware="tpu-v5e").to_json() == first
    again, y = encoder()  # a fresh module with the same seed
    assert annealer.Problem.from_torch(again, y, hardware="tpu-v5e").to_json() == first


@needs_torch
def test_exports_attention_whatever_the_grad_mode_and_restores_the_flags():
    # torch 1.13's fused attention path (no ONNX export) is taken under no_grad or with frozen
    # parameters; from_torch exports the ordinary path and puts the flags back.
    module, x = encoder()
    expected = annealer.Problem.from_torch(module, x, hardware="tpu-v5e")
    module.train()
    module.layers[0].dropout.eval()
    module.layers[0].self_attn.requires_grad_(False)
    with torch.no_grad():
        assert annealer.Problem.from_torch(module, x, hardware="tpu-v5e") == expected
    assert module.training and module.layers[0].training and not module.layers[0].dropout.training
    assert not module.layers[0].self_attn.in_proj_weight.requires_grad
    assert module.layers[0].linear1.weight.requires_grad


@needs_torch
def test_hardware_as_yaml_path_overrides_and_inputs(source_dir, tmp_path):
    module, x = conv_net()
    yaml = source_dir / "hardware" / "tpu-v5e.yaml"
    assert annealer.Problem.from_torch(module, x, hardware=yaml) == annealer.Problem.from_torch(
        module, x, hardware="tpu-v5e")
    small = annealer.Problem.from_torch(module, x, hardware="tpu-v5e", hardware_overrides={"fast_memory": "4 MiB"})
    assert small.capacity == annealer.hardware_profile("tpu-v5e", {"fast_memory": "4 MiB"})["capacity"]
    path = export_file(module, x, str(tmp_path / "conv.onnx"))
    assert small == annealer.Problem.from_onnx(path, hardware="tpu-v5e", hardware_overrides={"fast_memory": "4 MiB"})
    named = annealer.Problem.from_torch(module, x, hardware="tpu-v5e", input_names=["image"],
                                        inputs={"image": [1, 3, 16, 16]})
    assert matmul_macs(named) == CONV_NET_MACS + CONV_NET_MEAN_MACS


@needs_torch
def test_from_onnx_bytes_is_from_onnx(tmp_path):
    module, x = conv_net()
    path = export_file(module, x, str(tmp_path / "conv.onnx"))
    with open(path, "rb") as f:
        data = f.read()
    assert annealer.Problem._from_onnx_bytes(data, "tpu-v5e") == annealer.Problem.from_onnx(path, hardware="tpu-v5e")
    with pytest.raises(annealer.InputError, match=r"^mine: not an ONNX model"):
        annealer.Problem._from_onnx_bytes(b"\x01\x02junk", "tpu-v5e", origin="mine")
    with pytest.raises(TypeError):
        annealer.Problem._from_onnx_bytes("text, not bytes", "tpu-v5e")


@needs_torch
def test_bad_arguments_name_the_argument():
    module, x = conv_net()
    with pytest.raises(TypeError, match=r"module must be a torch\.nn\.Module, got function"):
        annealer.Problem.from_torch(lambda t: t, x, hardware="tpu-v5e")
    with pytest.raises(TypeError, match=r"example_inputs must be .*got dict"):
        annealer.Problem.from_torch(module, {"x": x}, hardware="tpu-v5e")
    with pytest.raises(TypeError, match=r"example_inputs .*\(empty\)"):
        annealer.Problem.from_torch(module, (), hardware="tpu-v5e")
    with pytest.raises(TypeError, match=r"hardware is required"):
        annealer.Problem.from_torch(module, x)
    with pytest.raises(TypeError, match=r"opset must be an int, got str"):
        annealer.Problem.from_torch(module, x, hardware="tpu-v5e", opset="17")
    with pytest.raises(ValueError, match=r"opset=99 is outside the 7\.\.17"):
        annealer.Problem.from_torch(module, x, hardware="tpu-v5e", opset=99)
    with pytest.raises(annealer.InputError, match=r"tpu-v99"):
        annealer.Problem.from_torch(module, x, hardware="tpu-v99")
    with pytest.raises(annealer.InputError, match=r"nonsense"):
        annealer.Problem.from_torch(module, x, hardware="tpu-v5e", hardware_overrides={"nonsense": "1"})


@needs_torch
def test_export_failure_and_importer_rejection():
    class Svd(torch.nn.Module):
        def forward(self, t):
            return torch.linalg.svd(t)[0]

    with pytest.raises(annealer.ExportError, match=r"^Problem\.from_torch: torch\.onnx\.export of module \(Svd, "
                                                  r"opset 17\) failed: UnsupportedOperatorError: .*linalg_svd"):
        annealer.Problem.from_torch(Svd(), torch.randn(4, 8), hardware="tpu-v5e")

    class Unique(torch.nn.Module):
        def forward(self, t):
            return torch.unique(t, sorted=True)

    with pytest.raises(annealer.InputError, match=r"^Unique \(torch\.onnx\.export\): node '/Unique' \(Unique\): "
                                                  r"operator not supported"):
        annealer.Problem.from_torch(Unique(), torch.randn(4, 8), hardware="tpu-v5e")


def test_without_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    with pytest.raises(ImportError, match=r"Problem\.from_torch needs PyTorch"):
        annealer.Problem.from_torch(object(), None, hardware="tpu-v5e")


@needs_torch
def test_example_script_runs(source_dir, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["from_torch.py", "--model", "small", "--time", "0.5", "--threads", "1"])
    runpy.run_path(str(source_dir / "examples" / "from_torch.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "imported" in out and "latency" in out
