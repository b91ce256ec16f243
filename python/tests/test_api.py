"""The package reads like Python: docstrings on everything, a stub that lists everything."""
import ast
import inspect
import pathlib

import annealer

STUB = pathlib.Path(annealer.__file__).with_name("__init__.pyi")


def public_members(cls):
    return [name for name in vars(cls) if not name.startswith("_")]


def stub_names():
    tree = ast.parse(STUB.read_text())
    top, members = set(), {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            top.add(node.name)
            members[node.name] = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
            members[node.name] |= {n.target.id for n in node.body if isinstance(n, ast.AnnAssign)}
        elif isinstance(node, ast.FunctionDef):
            top.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                if isinstance(target, ast.Name):
                    top.add(target.id)
    return top, members


def test_everything_public_has_a_docstring():
    assert annealer.__doc__
    for name in annealer.__all__:
        obj = getattr(annealer, name)
        assert inspect.getdoc(obj), name
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            for member in public_members(obj):
                assert inspect.getdoc(getattr(obj, member)), f"{name}.{member}"


def test_the_stub_lists_everything():
    top, members = stub_names()
    assert set(annealer.__all__) <= top
    for name in annealer.__all__:
        obj = getattr(annealer, name)
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            missing = set(public_members(obj)) - members[name]
            assert not missing, f"{name}: {missing} not in {STUB.name}"


def test_exceptions_are_value_errors():
    for error in (annealer.InputError, annealer.ConfigError, annealer.NoScheduleError):
        assert issubclass(error, ValueError) and error.__doc__
