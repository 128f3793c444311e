"""Configuration problems: one `Problem` per wrong key (its dotted path and what is wrong),
`ConfigProblems` raising them all at once, pydantic's `ValidationError`s turned into problems
with paths (and key suggestions), and each problem annotated with where it came from: its YAML
line, or the `SCORECAR_*` variable that set it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from scorers.errors import ConfigError

__all__ = ["ConfigProblems", "Problem", "annotate", "key_path", "validation_problems"]


@dataclass(frozen=True)
class Problem:
    """One configuration problem: the dotted key path (`scorers[1].scorer`) and what is wrong."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class ConfigProblems(ConfigError):
    """A `ConfigError` carrying its problems one by one.

    Attributes:
        problems: each problem as `"path: message"`, in the order of the message.
    """

    def __init__(self, problems: Sequence[str], source: str | None = None) -> None:
        where = f" ({source})" if source else ""
        count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
        super().__init__(f"invalid configuration{where}: {count}\n"
                         + "\n".join(f"  {p}" for p in problems))
        self.problems = list(problems)


def key_path(loc: Iterable[str | int]) -> str:
    """The dotted key path of a location: `("scorers", 1, "scorer")` -> `scorers[1].scorer`."""
    out = ""
    for seg in loc:
        out += f"[{seg}]" if isinstance(seg, int) else (f".{seg}" if out else str(seg))
    return out


def _clean_loc(loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
    # A discriminated union (sampling) puts its tag in the location: drop it.
    out: list[str | int] = []
    for seg in loc:
        if out and out[-1] == "sampling" and seg in ("none", "ratio"):
            continue
        out.append(seg)
    return tuple(out)


def _model_at(root: type[BaseModel], loc: Sequence[str | int]) -> type[BaseModel] | None:
    """The model class at `loc` inside `root` (the `Config`), when it is one model (for key
    suggestions)."""
    annotation: Any = root
    for seg in loc:
        annotation = _unwrap(annotation)
        if isinstance(seg, int):
            if get_origin(annotation) is not list:
                return None
            annotation = get_args(annotation)[0]
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
            field = annotation.model_fields.get(seg)
            if field is None:
                return None
            annotation = field.annotation
        else:
            return None
    annotation = _unwrap(annotation)
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) \
        else None


def _unwrap(annotation: Any) -> Any:
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin is Union or type(annotation).__name__ == "UnionType":
            members = [a for a in get_args(annotation) if a is not type(None)]
            if len(members) != 1:
                return annotation
            annotation = members[0]
        else:
            return annotation


def validation_problems(exc: ValidationError, root: type[BaseModel]) -> list[Problem]:
    """Every error of `exc`, raised validating the model `root`, as a `Problem` with its path."""
    problems = []
    for err in exc.errors(include_url=False, include_input=False):
        loc = _clean_loc(tuple(err["loc"]))
        kind = err["type"]
        message = err["msg"]
        if kind == "extra_forbidden":
            model = _model_at(root, loc[:-1])
            message = "unknown key" + (f" (valid keys: {', '.join(model.model_fields)})"
                                       if model is not None else "")
        elif kind == "missing":
            message = "required key is missing"
        elif kind in ("value_error", "assertion_error"):
            message = re.sub(r"^(Value|Assertion) error, ", "", message)
        problems.append(Problem(key_path(loc), message))
    return problems


def annotate(problem: Problem, lines: Mapping[str, int],
             origins: Mapping[str, str]) -> tuple[str, int | None]:
    """The problem's text with where it came from (env variable or line), and its line."""
    path = problem.path
    while path:
        if path in origins:
            return f"{problem} (from {origins[path]})", None
        if path in lines:
            return f"{problem} (line {lines[path]})", lines[path]
        parent = re.sub(r"(\.[^.\[\]]*|\[\d+\])$", "", path)
        path = parent if parent != path else ""
    return str(problem), None
