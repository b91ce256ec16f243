"""Schedules a PyTorch model: export it to ONNX in memory, import it for a hardware profile and
search (docs/python.md).

    PYTHONPATH=build/python /usr/bin/python3 examples/from_torch.py                 # ResNet-18, tpu-v5e, 5 s
    PYTHONPATH=build/python /usr/bin/python3 examples/from_torch.py --model small --time 1

ResNet-18 is torchvision's architecture with random weights (weights=None: nothing is
downloaded; the schedule depends on the shapes only).
"""
import argparse

import torch

import annealer


class SmallNet(torch.nn.Module):
    """Two 3x3 convolutions, global average pooling and a classifier."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.c2 = torch.nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(32, 10)

    def forward(self, x):
        x = torch.relu(self.c1(x))
        x = torch.relu(self.c2(x))
        return self.fc(x.mean(dim=(2, 3)))


def model(name: str):
    if name == "resnet18":
        import torchvision

        return torchvision.models.resnet18(weights=None), torch.randn(1, 3, 224, 224)
    return SmallNet(), torch.randn(1, 3, 32, 32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["resnet18", "small"], default="resnet18")
    parser.add_argument("--hardware", default="tpu-v5e", help="a built-in profile or a YAML file")
    parser.add_argument("--time", type=float, default=5, help="search seconds")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    torch.manual_seed(0)
    module, example = model(args.model)
    problem = annealer.Problem.from_torch(module, example, hardware=args.hardware)
    print(f"imported {args.model} for {args.hardware}: {problem.ops} ops, {problem.tensors} tensors, "
          f"lower bound {annealer.lower_bound(problem):,.0f} cycles")
    start = annealer.baseline(problem)
    result = annealer.search(problem, time=args.time, threads=args.threads, seed=args.seed)
    print(f"one op per subgraph: latency {annealer.evaluate(problem, start).total:,.0f} cycles")
    print(f"annealer {args.time:g} s: latency {result.total:,.0f} cycles in {len(result.schedule)} subgraphs, "
          f"gap {result.gap:.1f} % to the bound" + (f" ({result.proof})" if result.proof else ""))


if __name__ == "__main__":
    main()
