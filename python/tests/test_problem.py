"""Problem: loading (file, JSON text, dict, ONNX model), properties, copies for sweeps, and every input error."""
import json
import os
import subprocess

import pytest

import annealer


def test_load_and_properties(problem_path):
    p = annealer.Problem.load(problem_path("mlsys-2026-13"))
    assert (p.ops, p.tensors, p.capacity, p.bandwidth, p.native) == (63, 100, 600000, 50.0, 128)
    assert repr(p) == "<annealer.Problem: 63 ops, 100 tensors, capacity 600000, bandwidth 50>"
    assert annealer.lower_bound(p) > 0


def test_from_json_and_from_dict_equal_load(problem_path):
    path = problem_path("mlsys-2026-5")
    text = open(path).read()
    loaded = annealer.Problem.load(path)
    assert annealer.Problem.from_json(text) == loaded
    assert annealer.Problem.from_dict(json.loads(text)) == loaded


def test_to_json_to_dict_and_save_round_trip(problem_path, tmp_path):
    p = annealer.Problem.load(problem_path("mlsys-2026-5"))
    assert annealer.Problem.from_json(p.to_json()) == p
    assert p.to_dict()["fast_memory_capacity"] == p.capacity
    p.save(str(tmp_path / "copy.json"))
    assert annealer.Problem.load(str(tmp_path / "copy.json")) == p


def test_with_hardware_returns_a_new_problem(problem_path):
    p = annealer.Problem.load(problem_path("mlsys-2026-5"))
    q = p.with_hardware(capacity=60000)
    assert (q.capacity, q.bandwidth, q.ops) == (60000, p.bandwidth, p.ops)
    assert p.capacity == 30000  # the original is unchanged
    r = p.with_hardware(bandwidth=7.5)
    assert (r.capacity, r.bandwidth) == (p.capacity, 7.5)
    both = p.with_hardware(capacity=40000, bandwidth=30)
    assert (both.capacity, both.bandwidth) == (40000, 30.0)
    assert annealer.lower_bound(r) > annealer.lower_bound(p)  # slower memory, higher bound


@pytest.mark.parametrize("kwargs, field", [
    ({"capacity": 0}, "fast_memory_capacity"),
    ({"capacity": -5}, "fast_memory_capacity"),
    ({"bandwidth": 0.0}, "slow_memory_bandwidth"),
    ({"bandwidth": float("nan")}, "slow_memory_bandwidth"),
])
def test_with_hardware_rejects_bad_hardware(problem_path, kwargs, field):
    p = annealer.Problem.load(problem_path("mlsys-2026-5"))
    with pytest.raises(annealer.InputError) as error:
        p.with_hardware(**kwargs)
    assert error.value.field == field
    assert error.value.file.startswith("with_hardware(")


def test_missing_file_has_the_cli_message(cli, tmp_path):
    missing = str(tmp_path / "nope.json")
    with pytest.raises(annealer.InputError) as error:
        annealer.Problem.load(missing)
    assert isinstance(error.value, ValueError)
    assert error.value.file == missing and error.value.field is None and error.value.index is None
    run = subprocess.run([cli, "--quiet", "--time", "1s", missing], capture_output=True, text=True)
    assert run.returncode == 1
    assert run.stderr == f"annealer: {error.value}\n"


def test_bad_field_has_file_field_index_and_the_cli_message(cli, problem_path, tmp_path):
    data = json.load(open(problem_path("mlsys-2026-5")))
    data["inputs"][3][0] = 9999
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(annealer.InputError) as error:
        annealer.Problem.load(str(path))
    e = error.value
    assert (e.file, e.field, e.index) == (str(path), "inputs[3][0]", 0)
    assert e.message == str(e) and "out of range" in str(e)
    run = subprocess.run([cli, "--quiet", "--time", "1s", str(path)], capture_output=True, text=True)
    assert run.stderr == f"annealer: {e}\n"


@pytest.mark.parametrize("text, message", [
    ("", "<string>: the input is empty"),
    ("{", "<string>: malformed JSON"),
    ('{"widths": [1]}', "<string>: heights: required field is missing"),
    ("[]", "<string>: top level: expected an object"),
])
def test_from_json_errors(text, message):
    with pytest.raises(annealer.InputError, match="^" + message.replace("[", r"\[")):
        annealer.Problem.from_json(text)


def test_from_dict_errors(problem_path):
    data = json.load(open(problem_path("mlsys-2026-5")))
    data["widths"][2] = "wide"
    with pytest.raises(annealer.InputError) as error:
        annealer.Problem.from_dict(data)
    assert (error.value.file, error.value.field, error.value.index) == ("<dict>", "widths[2]", 2)
    with pytest.raises(TypeError):
        annealer.Problem.from_dict("not a dict")
    with pytest.raises(TypeError):
        annealer.Problem.load(42)


def test_save_to_a_missing_directory_raises_oserror(problem_path, tmp_path):
    p = annealer.Problem.load(problem_path("mlsys-2026-5"))
    with pytest.raises(OSError):
        p.save(str(tmp_path / "no" / "such" / "dir.json"))


MODELS = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "models")


def test_from_onnx_imports_a_model_like_the_cli():
    p = annealer.Problem.from_onnx(os.path.join(MODELS, "mlp.onnx"), hardware="tpu-v5e")
    assert (p.ops, p.capacity, p.native) == (9, 67108864, 128)  # 3 Gemm, 3 bias, 2 Relu, Softmax
    dyn = annealer.Problem.from_onnx(os.path.join(MODELS, "dynamic_shapes.onnx"), hardware="gemmini-default",
                                     inputs={"x": [1, 8, 16, 16]})
    assert dyn.native == 16
    assert annealer.lower_bound(dyn) > 0


def test_from_onnx_errors_are_the_cli_messages():
    model = os.path.join(MODELS, "dynamic_shapes.onnx")
    with pytest.raises(annealer.InputError, match="graph input 'x' has dynamic dims Nx8x16x16; give them with --input x=DIMS"):
        annealer.Problem.from_onnx(model, hardware="tpu-v5e")
    with pytest.raises(annealer.InputError, match="a model needs a hardware profile"):
        annealer.Problem.from_onnx(model)
    with pytest.raises(annealer.InputError, match="unknown hardware profile"):
        annealer.Problem.from_onnx(model, hardware="tpu-v99", inputs={"x": [1, 8, 16, 16]})
    with pytest.raises(annealer.InputError, match="cannot open the file"):
        annealer.Problem.from_onnx("missing.onnx", hardware="tpu-v5e")
    with pytest.raises(TypeError):
        annealer.Problem.from_onnx(model, hardware="tpu-v5e", inputs={"x": "1x8x16x16"})


def test_hardware_profiles_lists_the_builtins_with_their_numbers():
    profiles = {p["name"]: p for p in annealer.hardware_profiles()}
    assert {"tpu-v5e", "gemmini-default", "mlsys-2026"} <= set(profiles)
    v5e = profiles["tpu-v5e"]
    assert (v5e["capacity"], v5e["bandwidth"], v5e["native"], v5e["matmul_base"], v5e["pointwise_base"]) == (
        67108864, 273, 128, 32, 8)
    assert v5e["sources"]


def test_hardware_profile_overrides_in_the_profiles_units(source_dir, cli):
    v5e = annealer.hardware_profile("tpu-v5e")
    small = annealer.hardware_profile("tpu-v5e", {"fast_memory": "4 MiB", "bandwidth": "400 GB/s"})
    assert (small["capacity"], small["fast_memory_bytes"], small["element_bytes"]) == (2 * 1048576, 4 * 1048576, 2)
    assert small["bandwidth"] == pytest.approx(400e9 / v5e["clock_hz"] / 2)
    assert small["matmul_base"] == v5e["matmul_base"] and small["name"] == "tpu-v5e"
    with pytest.raises(annealer.InputError, match=r'^hardware/tpu-v5e.yaml with fast_memory=4 Mib: fast_memory: unknown unit "Mib"'):
        annealer.hardware_profile("tpu-v5e", {"fast_memory": "4 Mib"})
    with pytest.raises(annealer.InputError, match=r'^hardware/tpu-v5e.yaml with capacity=1: unknown key "capacity"'):
        annealer.hardware_profile("tpu-v5e", {"capacity": "1"})
    model = os.path.join(MODELS, "mlp.onnx")
    p = annealer.Problem.from_onnx(model, hardware="gemmini-default", hardware_overrides={"fast_memory": "64 KiB"})
    assert p.capacity == 65536 and p.ops == annealer.Problem.from_onnx(model, hardware="gemmini-default").ops


def test_with_profile_is_hardware_apply(source_dir, cli, tmp_path):
    path = str(source_dir / "problems" / "mlsys-2026-5.json")
    applied = annealer.Problem.load(path).with_profile("gemmini-default")
    out = tmp_path / "applied.json"
    subprocess.run([cli, "hardware", "gemmini-default", "--apply", path, "-o", str(out)], check=True,
                   capture_output=True, timeout=60)
    assert applied == annealer.Problem.load(str(out))
    assert applied.to_json() == out.read_text()
    smaller = annealer.Problem.load(path).with_profile("gemmini-default", {"fast_memory": "16 KiB"})
    assert smaller.capacity == 16384 and smaller.native == 16
